import BackupModel
import ConsoleStore
import Foundation
import GRDB

/// The SQLite store: one file, a GRDB `DatabasePool` in WAL mode, foreign keys on, a 5 s busy
/// timeout, schema from ``Migrations``; every rule is the shared one (``SQLRuleStore``) over
/// ``SQLiteDriver``.
///
/// Every mutation and its audit entry share one write transaction on the pool's writer. Hot
/// single-row reads (lookups, the access version) run one cached statement through the C API
/// (``RawCursor``), on the writer connection whenever it is free: `DatabasePool.read` adds
/// BEGIN/COMMIT and a schema-version query per call, which tripled the cost of a lookup, and a
/// separate reader connection re-reads its pages through the OS after every audit write this
/// process makes (SQLite drops a connection's cache when another connection changed the
/// file). The writer's cache stays warm across its own writes. While a transaction or a group
/// commit holds the writer, a served read takes a reader instead of waiting
/// (``SQLiteDriver/readOne(_:_:)``).
public final class SQLiteConsoleStore: SQLRuleStore {
    public let driver: SQLiteDriver
    public let clock: @Sendable () -> Int64
    public let checkpoints: StoreCheckpoints
    /// A caller that finds no commit running commits its own entry: SQLite's commit never looks
    /// at the task's cancellation, so no caller's cancellation fails the others' entries.
    public let auditGroup = AuditGroupCommit(leadsInline: true)

    /// The path of the database file.
    public let path: String

    var pool: DatabasePool { driver.pool }

    /// Bytes free to an unprivileged writer on the filesystem that holds the database file.
    public func availableBytes() -> Int64? {
        var info = statvfs()
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard statvfs(directory, &info) == 0 else { return nil }
        let (bytes, overflow) = Int64(info.f_bavail).multipliedReportingOverflow(by: Int64(info.f_frsize))
        return overflow ? .max : bytes
    }

    /// Opens (creating if needed) the store at `path` and migrates it.
    ///
    /// Parent directories are created with mode 0700 and the file with mode 0600: the store holds
    /// token hashes and sealed blobs, readable by its owner alone.
    /// - Parameter clock: unix milliseconds, injected so tests control audit times.
    /// - Parameter crashPoint: a debug build's crash point inside a transaction (``StoreCheckpoint``).
    /// - Throws: ``ConsoleError`` `invalid_store_path` for a URL (a database URL reaching the
    ///   SQLite store would otherwise become directories named after its credentials);
    ///   `internal_error` when the file cannot be created or migrated.
    public convenience init(
        path: String,
        clock: @escaping @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded()) },
        crashPoint: String? = nil
    ) throws(ConsoleError) {
        try self.init(path: path, clock: clock, checkpoints: .crash(at: crashPoint))
    }

    /// Opens (creating if needed) the store at `path` and migrates it, with `checkpoints` hooked
    /// into its transactions.
    public init(path: String, clock: @escaping @Sendable () -> Int64, checkpoints: StoreCheckpoints)
        throws(ConsoleError)
    {
        self.path = path
        self.clock = clock
        self.checkpoints = checkpoints
        if let scheme = path.range(of: "://").map({ path[..<$0.lowerBound] }), !scheme.contains("/") {
            // Named only when it is a plain scheme (`postgres`): anything else before `://` may
            // be a user and password.
            let plain =
                (1...16).contains(scheme.count)
                && scheme.unicodeScalars.allSatisfy {
                    $0.isASCII && ($0.properties.isAlphabetic || "0123456789+-.".unicodeScalars.contains($0))
                }
            throw .invalid(
                "invalid_store_path",
                "The SQLite store path is a URL\(plain ? " (\(scheme)://…)" : ""), not a file; open it with the store for that URL."
            )
        }
        var isDirectory: ObjCBool = false
        if path.isEmpty
            || FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
        {
            throw .invalid(
                "invalid_store_path",
                path.isEmpty
                    ? "The SQLite store path is empty; pass --db PATH or set BACKUPCTL_DB."
                    : "The SQLite store path \(UntrustedText.escaped(String(path.prefix(200)))) is a directory; name a file in it."
            )
        }
        try Self.prepareFile(at: path)
        var config = Configuration()
        config.foreignKeysEnabled = true
        config.busyMode = .timeout(5)
        config.label = "backupctl"
        // A store transaction holds the writer across statements (``SQLiteDriver``).
        config.allowsUnsafeTransactions = true
        config.prepareDatabase { db in
            // The writer gets a 64 MiB page cache (SQLite's default is 2 MiB): a batch of backups
            // touches every index of several large tables, and with the default the batch
            // spills to the WAL and re-reads pages through the OS on every insert.
            if !db.configuration.readonly {
                try db.execute(sql: "PRAGMA cache_size = -65536")
                // When the WAL starts over, its file is cut back to this (SQLite keeps it at
                // its longest otherwise): a burst's WAL does not hold the disk after it.
                try db.execute(sql: "PRAGMA journal_size_limit = \(Self.walSizeLimitBytes)")
            }
        }
        do {
            let pool = try DatabasePool(path: path, configuration: config)
            try Migrations.migrator.migrate(pool)
            driver = SQLiteDriver(pool: pool)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_NOTADB {
            throw .invalid(
                "invalid_store_path",
                "\(UntrustedText.escaped(String(path.prefix(200)))) is not a SQLite database; --db names the console's store file."
            )
        } catch {
            throw Self.mapError(error, while: "opening the console store at \(path)")
        }
    }

    /// The WAL file's size once it starts over (`journal_size_limit`): 64 MiB.
    static let walSizeLimitBytes = 64 << 20

    /// Creates the parent directories (0700) and an empty file (0600) before SQLite opens it.
    private static func prepareFile(at path: String) throws(ConsoleError) {
        let url = URL(fileURLWithPath: path)
        let fm = FileManager.default
        let parent = url.deletingLastPathComponent().path
        do {
            if !fm.fileExists(atPath: parent) {
                try fm.createDirectory(
                    atPath: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
            if !fm.fileExists(atPath: path) {
                guard fm.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                    throw ConsoleError.internalError("Cannot create the console store file \(path).")
                }
            }
        } catch let error as ConsoleError {
            throw error
        } catch {
            throw .internalError(
                "Cannot create the directory of the console store \(path): \(error.localizedDescription).")
        }
    }

    /// A read transaction on one of the pool's readers (one snapshot for several statements).
    func readSnapshot<T: Sendable>(_ what: @autoclosure () -> String, _ body: (Database) throws -> T)
        async throws(ConsoleError) -> T
    {
        do {
            return try SQLiteDriver.synchronously { try pool.read(body) }
        } catch {
            throw Self.mapError(error, while: what())
        }
    }

    /// A single-statement read outside a transaction: on the writer connection when it is free
    /// (its warm cache; see the type's note), else on a reader (``SQLiteDriver/readOne(_:_:)``).
    /// Only for bodies that run ONE SELECT: nothing here may write.
    func readOne<T: Sendable>(_ what: @autoclosure () -> String, _ body: (Database) throws -> T)
        async throws(ConsoleError) -> T
    {
        try await driver.readOne(what(), body)
    }

    /// Turns a GRDB or SQLite error into one operator-facing sentence (never SQL or arguments).
    static func mapError(_ error: any Error, while what: String) -> ConsoleError {
        if let error = error as? ConsoleError { return error }
        if let db = error as? DatabaseError {
            switch db.extendedResultCode {
            case .SQLITE_CONSTRAINT_FOREIGNKEY:
                return .notFound(
                    "The console store refused \(what): it refers to a tenant, operator or backup that does not exist.")
            case .SQLITE_CONSTRAINT_UNIQUE, .SQLITE_CONSTRAINT_PRIMARYKEY:
                return ConsoleError(
                    .conflict, code: "conflict", "The console store refused \(what): the record already exists.")
            default:
                if db.resultCode == .SQLITE_CONSTRAINT {
                    return .invalid(
                        "constraint_failed",
                        "The console store refused \(what): \(db.message ?? "a constraint failed").")
                }
                return .internalError(
                    "The console store failed while \(what): \(db.message ?? "SQLite error \(db.resultCode.rawValue)")."
                )
            }
        }
        return .internalError("The console store failed while \(what): \(error.localizedDescription).")
    }
}
