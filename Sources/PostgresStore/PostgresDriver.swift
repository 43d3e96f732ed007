import BackupModel
import ConsoleStore
import Foundation
import Logging
import NIOCore
import PostgresNIO

/// The shared rules' driver over a ``PostgresStoreDatabase``: transactions and reads on pool
/// leases, `$n` placeholders, row locks, and the audit chain's advisory lock.
public struct PostgresDriver: SQLDriver {
    public let database: PostgresStoreDatabase

    public var dialect: SQLDialect { .postgres }

    public init(database: PostgresStoreDatabase) { self.database = database }

    public func transaction<T: Sendable>(
        _ what: @autoclosure () -> String, _ body: (PostgresSession) async throws -> T
    ) async throws(ConsoleError) -> T {
        try await database.withBoundedTransaction(what()) { connection in
            try await body(PostgresSession(connection: connection, database: database))
        }
    }

    public func read<T: Sendable>(_ what: @autoclosure () -> String, _ body: (PostgresSession) async throws -> T)
        async throws(ConsoleError) -> T
    {
        try await database.withBoundedConnection(what()) { connection in
            try await body(PostgresSession(connection: connection, database: database))
        }
    }

    /// A read-only repeatable-read transaction: every statement sees the same snapshot, as a
    /// SQLite read transaction does.
    public func snapshot<T: Sendable>(
        _ what: @autoclosure () -> String, _ body: (PostgresSession) async throws -> T
    ) async throws(ConsoleError) -> T {
        try await database.withBoundedTransaction(what()) { connection in
            let session = PostgresSession(connection: connection, database: database)
            try await session.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            return try await body(session)
        }
    }
}

/// The statements of one PostgreSQL transaction or read, on one leased connection; each waits
/// for its answer at most the store's `query_timeout` (``PostgresStoreDatabase/bounded(_:committing:_:)``).
public struct PostgresSession: SQLSession {
    public let connection: PostgresConnection
    let database: PostgresStoreDatabase
    var logger: Logger { database.logger }

    /// `statement` with `$n` placeholders and its values bound.
    static func postgresQuery(_ statement: SQLStatement) throws -> PostgresQuery {
        let (sql, binds) = statement.render { "$\($0)" }
        var bindings = PostgresBindings(capacity: binds.count)
        for value in binds {
            switch value {
            case .null: bindings.appendNull()
            case .integer(let v): bindings.append(v)
            case .real(let v): bindings.append(v)
            case .text(let v): bindings.append(v)
            case .blob(let v): try bindings.append(v)
            case .bool(let v): bindings.append(v)
            }
        }
        return PostgresQuery(unsafeSQL: sql, binds: bindings)
    }

    public func query(_ statement: SQLStatement) async throws -> [SQLRow] {
        let query = try Self.postgresQuery(statement)
        return try await database.bounded(connection) {
            var rows: [SQLRow] = []
            var columns: [String]?
            for try await row in try await connection.query(query, logger: logger) {
                let names = columns ?? row.map(\.columnName)
                columns = names
                rows.append(SQLRow(columns: names, values: try row.map(Self.sqlValue)))
            }
            return rows
        }
    }

    public func execute(_ statement: SQLStatement) async throws {
        let query = try Self.postgresQuery(statement)
        try await database.bounded(connection) { _ = try await connection.query(query, logger: logger) }
    }

    /// The changed rows counted by the server: the statement becomes a data-modifying `WITH`
    /// whose `RETURNING` rows are counted (postgres-nio's async API does not hand over the
    /// command tag).
    public func changes(_ statement: SQLStatement) async throws -> Int {
        let counted: SQLStatement = "WITH changed AS (\(statement) RETURNING 1) SELECT count(*) FROM changed"
        return try await SQLRow.count(query(counted))
    }

    static func sqlValue(_ cell: PostgresCell) throws -> SQLValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .bool: return .bool(try cell.decode(Bool.self))
        case .int2, .int4, .int8: return .integer(try cell.decode(Int64.self))
        case .float4, .float8: return .real(try cell.decode(Double.self))
        case .bytea: return .blob(try cell.decode(Data.self))
        default: return .text(try cell.decode(String.self))
        }
    }
}

extension SQLRow {
    /// The single count a `SELECT count(*)` returned.
    fileprivate static func count(_ rows: [SQLRow]) throws -> Int { try rows.first?.get(0, as: Int.self) ?? 0 }
}

extension SQLDialect {
    /// PostgreSQL: `$n` placeholders, `FOR UPDATE` on rows a transaction goes on to change, a
    /// transaction-level advisory lock ordering audit appends across servers, `GREATEST`/`LEAST`,
    /// and `COLLATE "C"` where text is compared by range.
    public static let postgres = SQLDialect(
        name: "PostgreSQL", placeholder: { "$\($0)" }, lockClause: " FOR UPDATE",
        chainLock: "SELECT pg_advisory_xact_lock(\(PostgresConsoleStore.auditLockKey))", greatest: "GREATEST",
        least: "LEAST", bytewise: #" COLLATE "C""#)
}
