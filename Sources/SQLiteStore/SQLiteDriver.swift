import BackupModel
import ConsoleStore
import Foundation
import GRDB
import GRDBSQLite

/// The shared rules' driver over a GRDB `DatabasePool` in WAL mode.
///
/// A write transaction holds the writer connection through a ``WriterGate`` from `BEGIN
/// IMMEDIATE` to `COMMIT`, each statement a synchronous GRDB call on it (no hop to GRDB's
/// queues and back): a statement or transaction, once begun, always finishes. Reads run each
/// statement on one of the pool's readers; a snapshot is a deferred transaction on the writer.
public struct SQLiteDriver: SQLDriver {
    let pool: DatabasePool
    let gate = WriterGate()

    public var dialect: SQLDialect { .sqlite }

    init(pool: DatabasePool) { self.pool = pool }

    public func transaction<T: Sendable>(
        _ what: @autoclosure () -> String, _ body: (SQLiteSession) async throws -> T
    ) async throws(ConsoleError) -> T {
        try await onWriter(what(), begin: "BEGIN IMMEDIATE", body)
    }

    public func snapshot<T: Sendable>(
        _ what: @autoclosure () -> String, _ body: (SQLiteSession) async throws -> T
    ) async throws(ConsoleError) -> T {
        try await onWriter(what(), begin: "BEGIN DEFERRED", body)
    }

    public func read<T: Sendable>(_ what: @autoclosure () -> String, _ body: (SQLiteSession) async throws -> T)
        async throws(ConsoleError) -> T
    {
        do {
            return try await body(SQLiteSession(pool: pool, onWriter: false))
        } catch {
            throw SQLiteConsoleStore.mapError(error, while: what())
        }
    }

    /// Runs `access` — one read-only statement through the C API (``RawCursor``) — on the
    /// writer connection outside a transaction when the writer is free (its cache is the warm
    /// one), and on one of the pool's readers when it is not: a served read never waits behind
    /// a transaction or a group commit of other requests.
    ///
    /// A script's reads too: what holds the writer then is mostly the script's own group commit
    /// of the lines before, and the reads of the next lines go on beside it on the other core.
    /// A reader's cache is cold after each commit (SQLite drops it when another connection
    /// changed the file), but a script commits once per group of lines, not per read.
    func readOne<T>(_ what: @autoclosure () -> String, _ access: (Database) throws -> T) async throws(ConsoleError)
        -> T
    {
        if !gate.tryAcquire() {
            do {
                return try Self.synchronously { try pool.unsafeRead(access) }
            } catch {
                throw SQLiteConsoleStore.mapError(error, while: what())
            }
        }
        defer { gate.release() }
        do {
            return try Self.synchronously { try pool.writeWithoutTransaction(access) }
        } catch {
            throw SQLiteConsoleStore.mapError(error, while: what())
        }
    }

    private func onWriter<T: Sendable>(
        _ what: @autoclosure () -> String, begin: String, _ body: (SQLiteSession) async throws -> T
    ) async throws(ConsoleError) -> T {
        await gate.acquire()
        defer { gate.release() }
        let session = SQLiteSession(pool: pool, onWriter: true)
        do {
            try session.writer { try Self.control(begin, $0) }
            do {
                let result = try await body(session)
                try session.writer { try Self.control("COMMIT", $0) }
                return result
            } catch {
                try? session.writer(Self.rollBack)
                throw error
            }
        } catch {
            throw SQLiteConsoleStore.mapError(error, while: what())
        }
    }

    /// A write transaction whose statements are all synchronous: `BEGIN IMMEDIATE`, `body` and
    /// `COMMIT` in one call on the writer (one turn of GRDB's queue, not one per statement),
    /// rolled back when `body` or the commit throws.
    func synchronousTransaction<T>(_ what: @autoclosure () -> String, _ body: (Database) throws -> T)
        async throws(ConsoleError) -> T
    {
        await gate.acquire()
        defer { gate.release() }
        do {
            return try Self.synchronously {
                try pool.writeWithoutTransaction { db in
                    try Self.control("BEGIN IMMEDIATE", db)
                    do {
                        let result = try body(db)
                        try Self.control("COMMIT", db)
                        return result
                    } catch {
                        try? Self.rollBack(db)
                        throw error
                    }
                }
            }
        } catch {
            throw SQLiteConsoleStore.mapError(error, while: what())
        }
    }

    /// A transaction's `BEGIN …` or `COMMIT`, from the connection's statement cache: parsing
    /// them again per transaction was a tenth of a lone audit append.
    private static func control(_ sql: String, _ db: Database) throws {
        try db.cachedStatement(sql: sql).execute()
    }

    /// Ends a failed transaction (a statement may have ended it already).
    private static func rollBack(_ db: Database) throws {
        if db.isInsideTransaction { try db.execute(sql: "ROLLBACK") }
    }

    /// Runs `access` outside any async context, so GRDB's synchronous API is the one called.
    static func synchronously<T>(_ access: () throws -> T) throws -> T { try access() }
}

/// The statements of one SQLite transaction (on the writer) or read (on a reader).
public struct SQLiteSession: SQLSession {
    let pool: DatabasePool
    let onWriter: Bool

    func writer<T>(_ access: (Database) throws -> T) throws -> T {
        try SQLiteDriver.synchronously { try pool.writeWithoutTransaction(access) }
    }

    /// One statement on the writer (in its transaction) or on a reader. A reader runs it
    /// outside a transaction (`unsafeRead`): one statement is atomic by itself, and a read's
    /// statements each take their own reader anyway, so `read`'s BEGIN and COMMIT bought nothing.
    private func run<T>(_ access: (Database) throws -> T) throws -> T {
        if onWriter { return try writer(access) }
        return try SQLiteDriver.synchronously { try pool.unsafeRead(access) }
    }

    /// The cached statement of `statement`'s text, its values bound through the C API: GRDB's
    /// `StatementArguments` resolve generic metadata per value, most of a hot write's cost.
    private static func prepare(_ statement: SQLStatement, _ db: Database) throws -> Statement {
        let (sql, binds) = statement.render { _ in "?" }
        let prepared = try db.cachedStatement(sql: sql)
        // Resets, clears the bindings and marks the statement bound, so GRDB keeps ours.
        prepared.setUncheckedArguments(StatementArguments())
        let handle = prepared.sqliteStatement
        for (offset, value) in binds.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .null: code = sqlite3_bind_null(handle, index)
            case .integer(let v): code = sqlite3_bind_int64(handle, index, v)
            case .bool(let v): code = sqlite3_bind_int64(handle, index, v ? 1 : 0)
            case .real(let v): code = sqlite3_bind_double(handle, index, v)
            case .text(var v):
                code = v.withUTF8 { bytes in
                    guard let base = bytes.baseAddress, bytes.count > 0 else {
                        // An empty text, not NULL (which a nil pointer would bind).
                        return sqlite3_bind_text(handle, index, "", 0, Self.transient)
                    }
                    return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                        sqlite3_bind_text(handle, index, $0, Int32(bytes.count), Self.transient)
                    }
                }
            case .blob(let v):
                code = v.withUnsafeBytes { bytes in
                    guard let base = bytes.baseAddress, bytes.count > 0 else {
                        return sqlite3_bind_zeroblob(handle, index, 0)
                    }
                    return sqlite3_bind_blob(handle, index, base, Int32(bytes.count), Self.transient)
                }
            }
            guard code == SQLITE_OK else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: db.lastErrorMessage, sql: sql)
            }
        }
        return prepared
    }

    /// SQLite copies the bytes it is given (`SQLITE_TRANSIENT`).
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    public func query(_ statement: SQLStatement) async throws -> [SQLRow] {
        try run { db in
            let prepared = try Self.prepare(statement, db)
            let columns = prepared.columnNames
            var rows: [SQLRow] = []
            let cursor = try Row.fetchCursor(prepared)
            while let row = try cursor.next() {
                rows.append(SQLRow(columns: columns, values: row.databaseValues.map(Self.sqlValue)))
            }
            return rows
        }
    }

    public func execute(_ statement: SQLStatement) async throws {
        try run { db in try Self.prepare(statement, db).execute() }
    }

    public func changes(_ statement: SQLStatement) async throws -> Int {
        try run { db in
            try Self.prepare(statement, db).execute()
            return db.changesCount
        }
    }

    static func databaseValue(_ value: SQLValue) -> DatabaseValue {
        switch value {
        case .null: .null
        case .integer(let v): v.databaseValue
        case .real(let v): v.databaseValue
        case .text(let v): v.databaseValue
        case .blob(let v): v.databaseValue
        case .bool(let v): (v ? Int64(1) : 0).databaseValue
        }
    }

    static func sqlValue(_ value: DatabaseValue) -> SQLValue {
        switch value.storage {
        case .null: .null
        case .int64(let v): .integer(v)
        case .double(let v): .real(v)
        case .string(let v): .text(v)
        case .blob(let v): .blob(v)
        }
    }
}

extension SQLDialect {
    /// SQLite: `?` placeholders, no row locks (a write transaction holds the database's one
    /// writer, which also orders audit appends), `max`/`min` of two values, BINARY text order.
    public static let sqlite = SQLDialect(
        name: "SQLite", placeholder: { _ in "?" }, lockClause: "", chainLock: nil, greatest: "max", least: "min",
        bytewise: "")
}
