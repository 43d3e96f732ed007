import Foundation
import GRDB
import GRDBSQLite

/// A cached GRDB statement stepped through the SQLite C API, for merges that compare the
/// current rows of two cursors by their bytes without making a String per row.
///
/// The text of a column is valid until the next ``step()``; ``finish()`` resets the statement
/// so the cache can hand it out again.
struct RawCursor {
    private let statement: Statement
    private let handle: OpaquePointer
    private let connection: OpaquePointer?

    init(_ db: Database, sql: String, arguments: StatementArguments) throws {
        statement = try db.cachedStatement(sql: sql)
        try statement.setArguments(arguments)
        handle = statement.sqliteStatement
        connection = db.sqliteConnection
        sqlite3_reset(handle)
    }

    /// Binds text arguments straight through the C API: the hot single-row reads (a lookup,
    /// a backup's existence) spent a third of their time in GRDB's argument and row values.
    init(_ db: Database, sql: String, texts: [String]) throws {
        statement = try db.cachedStatement(sql: sql)
        handle = statement.sqliteStatement
        connection = db.sqliteConnection
        sqlite3_reset(handle)
        for (index, text) in texts.enumerated() {
            var text = text
            let code = text.withUTF8 { bytes in
                sqlite3_bind_text(handle, Int32(index + 1), bytes.baseAddress, Int32(bytes.count), Self.transient)
            }
            guard code == SQLITE_OK else { throw error(code) }
        }
    }

    /// SQLite copies the bytes it is given (`SQLITE_TRANSIENT`).
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private func error(_ code: Int32) -> DatabaseError { rawError(code, connection, statement) }

    /// Advances to the next row; `false` at the end.
    func step() throws -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw error(code)
        }
    }

    func finish() { sqlite3_reset(handle) }

    /// The bytes of a text column of the current row (empty for NULL).
    func text(_ column: Int32) -> UnsafeRawBufferPointer {
        guard let bytes = sqlite3_column_text(handle, column) else {
            return UnsafeRawBufferPointer(start: nil, count: 0)
        }
        return UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, column)))
    }

    func string(_ column: Int32) -> String { String(decoding: text(column), as: UTF8.self) }

    /// The text of a column, or `nil` for NULL.
    func optionalString(_ column: Int32) -> String? {
        sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : string(column)
    }

    func int(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    /// SQLite's BINARY collation: bytes compared as unsigned, a prefix first.
    static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int32 {
        let shared = min(a.count, b.count)
        if shared > 0, let left = a.baseAddress, let right = b.baseAddress {
            let order = memcmp(left, right, shared)
            if order != 0 { return order }
        }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }
}

/// A cached GRDB write statement bound and stepped through the SQLite C API: a hot insert
/// (an audit entry) without rendering its text or building GRDB's arguments per row.
struct RawStatement {
    enum Value {
        case integer(Int64)
        case text(String)
        /// A text, or NULL for `nil`.
        case optionalText(String?)
    }

    private let statement: Statement
    private let handle: OpaquePointer
    private let connection: OpaquePointer?

    init(_ db: Database, sql: String) throws {
        statement = try db.cachedStatement(sql: sql)
        handle = statement.sqliteStatement
        connection = db.sqliteConnection
    }

    /// Binds `values` to the parameters in order, runs the statement to its end and resets it.
    func run(_ values: Value...) throws {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        defer { sqlite3_reset(handle) }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .integer(let v): code = sqlite3_bind_int64(handle, index, v)
            case .text(let v): code = Self.bind(v, handle, index)
            case .optionalText(let v): code = v.map { Self.bind($0, handle, index) } ?? sqlite3_bind_null(handle, index)
            }
            guard code == SQLITE_OK else { throw error(code) }
        }
        let code = sqlite3_step(handle)
        guard code == SQLITE_DONE else { throw error(code) }
    }

    /// An empty text binds as an empty text, never NULL (which a nil pointer would bind).
    private static func bind(_ text: String, _ handle: OpaquePointer, _ index: Int32) -> Int32 {
        var text = text
        return text.withUTF8 { bytes in
            guard let base = bytes.baseAddress, bytes.count > 0 else {
                return sqlite3_bind_text(handle, index, "", 0, transient)
            }
            return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_bind_text(handle, index, $0, Int32(bytes.count), transient)
            }
        }
    }

    /// SQLite copies the bytes it is given (`SQLITE_TRANSIENT`).
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private func error(_ code: Int32) -> DatabaseError { rawError(code, connection, statement) }
}

/// The error of a statement stepped or bound through the C API, with the connection's message.
private func rawError(_ code: Int32, _ connection: OpaquePointer?, _ statement: Statement) -> DatabaseError {
    DatabaseError(
        resultCode: ResultCode(rawValue: code),
        message: connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) },
        sql: statement.sql)
}
