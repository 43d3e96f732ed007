import BackupModel

/// What the shared store rules need of a database, and nothing more: transactions, statements
/// that return rows or count the rows they changed, and the backend's differences as a
/// ``SQLDialect`` value. ``SQLiteStore`` and ``PostgresStore`` each provide one; every rule
/// above it (``SQLRuleStore``) is written once.
///
/// Errors thrown inside a body leave the driver as ``ConsoleError``: a ``ConsoleError`` as it
/// is, anything else mapped by the driver (unique violations are `conflict`, a missing parent
/// `not_found`, I/O `internal_error`), naming `what` and never SQL or bound values.
public protocol SQLDriver: Sendable {
    associatedtype Session: SQLSession

    var dialect: SQLDialect { get }

    /// Runs `body` in one write transaction: committed when it returns, rolled back when it
    /// throws. Transactions of one database run one at a time wherever they may race (SQLite's
    /// single writer; PostgreSQL's locks, including ``SQLDialect/chainLock``).
    func transaction<T: Sendable>(_ what: @autoclosure () -> String, _ body: (Session) async throws -> T)
        async throws(ConsoleError) -> T

    /// Runs `body`'s statements outside a transaction, each seeing what was committed before it.
    func read<T: Sendable>(_ what: @autoclosure () -> String, _ body: (Session) async throws -> T)
        async throws(ConsoleError) -> T

    /// Runs `body` in one read-only transaction: every statement sees the same snapshot.
    func snapshot<T: Sendable>(_ what: @autoclosure () -> String, _ body: (Session) async throws -> T)
        async throws(ConsoleError) -> T
}

/// The statements of one transaction or read (``SQLDriver``).
public protocol SQLSession {
    /// The rows of `statement`.
    func query(_ statement: SQLStatement) async throws -> [SQLRow]
    /// Runs `statement`, dropping any rows.
    func execute(_ statement: SQLStatement) async throws
    /// Runs one INSERT, UPDATE or DELETE and returns how many rows it changed.
    func changes(_ statement: SQLStatement) async throws -> Int
}

extension SQLSession {
    /// The first row of `statement`, if any.
    public func first(_ statement: SQLStatement) async throws -> SQLRow? { try await query(statement).first }

    /// The first column of the first row as a `T`, if there is a row.
    public func value<T: SQLDecodable>(_ statement: SQLStatement, as type: T.Type = T.self) async throws -> T? {
        guard let row = try await first(statement) else { return nil }
        return try row.get(0, as: T.self)
    }

    /// The first column of every row as a `T`.
    public func values<T: SQLDecodable>(_ statement: SQLStatement, as type: T.Type = T.self) async throws -> [T] {
        var result: [T] = []
        for row in try await query(statement) { result.append(try row.get(0, as: T.self)) }
        return result
    }

    /// Whether `statement` returns a row.
    public func exists(_ statement: SQLStatement) async throws -> Bool { try await first(statement) != nil }
}

/// A backend's differences, as a value (the model is sql-kit's `SQLDialect`): everything else
/// in a rule's SQL — `ON CONFLICT … DO UPDATE`, `RETURNING`, `excluded.` — is written the same
/// for SQLite (3.35 and later) and PostgreSQL.
public struct SQLDialect: Sendable {
    /// For messages and tests: `SQLite`, `PostgreSQL`.
    public var name: String
    /// The placeholder of the n-th bound value (1-based): `?` or `$n`.
    public var placeholder: @Sendable (Int) -> String
    /// Appended to a SELECT of rows the transaction goes on to change, so racing writers queue
    /// on them (` FOR UPDATE`); empty where the transaction already excludes other writers.
    public var lockClause: String
    /// Taken first by every audit append (``SQLRuleStore/appendChained(_:_:)``) so appends of
    /// several processes are serialised; `nil` where a write transaction already is.
    public var chainLock: SQLStatement?
    /// The larger and smaller of two values in one row (`max`/`min` or `GREATEST`/`LEAST`).
    public var greatest: String
    public var least: String
    /// Appended to a text column compared by range, so it compares bytes whatever the
    /// database's locale (` COLLATE "C"`); empty where text already compares bytewise.
    public var bytewise: String

    public init(
        name: String, placeholder: @escaping @Sendable (Int) -> String, lockClause: String,
        chainLock: SQLStatement?, greatest: String, least: String, bytewise: String
    ) {
        self.name = name
        self.placeholder = placeholder
        self.lockClause = lockClause
        self.chainLock = chainLock
        self.greatest = greatest
        self.least = least
        self.bytewise = bytewise
    }
}
