import BackupModel
import Foundation

/// One value bound to, or read from, a statement of the shared store rules: the few types the
/// schema uses, the same on every backend (SQLite stores `bool` as 0/1, PostgreSQL as BOOLEAN).
public enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
    case bool(Bool)
}

/// A Swift value that can be bound to a statement (``SQLStatement`` interpolation).
public protocol SQLBindable: Sendable {
    var sqlValue: SQLValue { get }
}

/// A Swift value that a row column can be read as (``SQLRow/get(_:as:)``).
public protocol SQLDecodable {
    /// The value, or `nil` when the column holds another type (a schema mismatch).
    init?(sqlValue: SQLValue)
}

extension String: SQLBindable, SQLDecodable {
    public var sqlValue: SQLValue { .text(self) }
    public init?(sqlValue: SQLValue) {
        guard case .text(let text) = sqlValue else { return nil }
        self = text
    }
}

extension Int64: SQLBindable, SQLDecodable {
    public var sqlValue: SQLValue { .integer(self) }
    public init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .integer(let value): self = value
        case .bool(let value): self = value ? 1 : 0
        default: return nil
        }
    }
}

extension Int: SQLBindable, SQLDecodable {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
    public init?(sqlValue: SQLValue) {
        guard let value = Int64(sqlValue: sqlValue) else { return nil }
        self = Int(value)
    }
}

extension Bool: SQLBindable, SQLDecodable {
    public var sqlValue: SQLValue { .bool(self) }
    public init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .bool(let value): self = value
        case .integer(let value): self = value != 0
        default: return nil
        }
    }
}

extension Double: SQLBindable, SQLDecodable {
    public var sqlValue: SQLValue { .real(self) }
    public init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .real(let value): self = value
        case .integer(let value): self = Double(value)
        default: return nil
        }
    }
}

extension Data: SQLBindable, SQLDecodable {
    public var sqlValue: SQLValue { .blob(self) }
    public init?(sqlValue: SQLValue) {
        guard case .blob(let data) = sqlValue else { return nil }
        self = data
    }
}

extension Optional: SQLBindable where Wrapped: SQLBindable {
    public var sqlValue: SQLValue { map(\.sqlValue) ?? .null }
}

extension Optional: SQLDecodable where Wrapped: SQLDecodable {
    public init?(sqlValue: SQLValue) {
        if case .null = sqlValue {
            self = .none
            return
        }
        guard let value = Wrapped(sqlValue: sqlValue) else { return nil }
        self = .some(value)
    }
}

extension SQLValue: SQLBindable {
    public var sqlValue: SQLValue { self }
}

/// One row of a result, its columns by name as the statement named them.
public struct SQLRow: Sendable {
    public let columns: [String]
    public let values: [SQLValue]

    public init(columns: [String], values: [SQLValue]) {
        self.columns = columns
        self.values = values
    }

    /// The column `name` as a `T`.
    /// - Throws: ``ConsoleError`` `internal_error` when the row has no such column or another type.
    public func get<T: SQLDecodable>(_ name: String, as type: T.Type = T.self) throws(ConsoleError) -> T {
        guard let index = columns.firstIndex(of: name) else {
            throw .internalError("The console store returned a row without its \(name) column.")
        }
        return try get(index)
    }

    /// The column at `index` as a `T`.
    public func get<T: SQLDecodable>(_ index: Int, as type: T.Type = T.self) throws(ConsoleError) -> T {
        guard values.indices.contains(index), let value = T(sqlValue: values[index]) else {
            throw .internalError("The console store returned an unexpected value in column \(index).")
        }
        return value
    }
}
