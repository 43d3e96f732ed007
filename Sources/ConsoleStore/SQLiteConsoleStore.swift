import BackupModel
import Foundation
import GRDB

/// The SQLite implementation of ``ConsoleStore``: one file, a GRDB `DatabasePool` in WAL mode,
/// foreign keys on, a 5 s busy timeout, schema from ``Migrations``.
///
/// Reads run on the pool's readers, writes on its single writer; every mutation and its audit
/// entry share one write transaction. Hot single-row reads (lookups) run one cached statement
/// on the writer connection through the C API (``RawCursor``), so they cost little more than
/// a raw prepared statement.
public final class SQLiteConsoleStore: ConsoleStore {
    let pool: DatabasePool
    // Single-statement reads on the hot paths (`lookup`, `backupExists`, …) run on the pool's
    // writer connection, outside a transaction: `DatabasePool.read` adds BEGIN/COMMIT and a
    // schema-version query per call, which tripled the cost of a lookup, and a separate reader
    // connection re-reads its pages through the OS after every audit write this process makes
    // (SQLite drops a connection's cache when another connection changed the file). The
    // writer's cache stays warm across its own writes.
    let clock: @Sendable () -> Int64
    /// In debug builds, the ``CrashPoint`` at which to `_exit(137)` (`BACKUPCTL_CRASH_AT`, for
    /// the crash-atomicity tests); release builds ignore it.
    let crashPoint: String?

    /// The path of the database file.
    public let path: String

    /// Opens (creating if needed) the store at `path` and migrates it.
    ///
    /// Parent directories are created with mode 0700 and the file with mode 0600: the store holds
    /// token hashes and sealed blobs, readable by its owner alone.
    /// - Parameter clock: unix milliseconds, injected so tests control audit times.
    /// - Parameter crashPoint: a debug build's crash point inside a transaction (``CrashPoint``).
    /// - Throws: ``ConsoleError`` `invalid_store_path` for a URL (a database URL reaching the
    ///   SQLite store would otherwise become directories named after its credentials);
    ///   `internal_error` when the file cannot be created or migrated.
    public init(
        path: String,
        clock: @escaping @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded()) },
        crashPoint: String? = nil
    ) throws(ConsoleError) {
        self.path = path
        self.clock = clock
        self.crashPoint = crashPoint
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
        try Self.prepareFile(at: path)
        var config = Configuration()
        config.foreignKeysEnabled = true
        config.busyMode = .timeout(5)
        config.label = "backupctl"
        config.prepareDatabase { db in
            // The writer gets a 64 MiB page cache (SQLite's default is 2 MiB): a batch of backups
            // touches every index of several large tables, and with the default the batch
            // spills to the WAL and re-reads pages through the OS on every insert.
            if !db.configuration.readonly { try db.execute(sql: "PRAGMA cache_size = -65536") }
        }
        do {
            pool = try DatabasePool(path: path, configuration: config)
            try Migrations.migrator.migrate(pool)
        } catch {
            throw Self.mapError(error, while: "opening the console store at \(path)")
        }
    }

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

    // MARK: Transactions with ConsoleError

    // The helpers below are `async` for the protocol's sake but call GRDB synchronously: a
    // lookup then runs on the calling thread with no hop to GRDB's queues and back (which
    // doubled its latency), and a statement or transaction, once begun, always finishes —
    // cancelling the caller (Ctrl-C, a dropped connection) is noticed between store calls.

    /// A read in a deferred transaction (a consistent snapshot for multi-statement reads), on
    /// one of the pool's readers.
    func read<T: Sendable>(
        _ what: @autoclosure () -> String, _ body: @escaping @Sendable (Database) throws -> T
    ) async throws(ConsoleError) -> T {
        do {
            return try Self.synchronously { try pool.read(body) }
        } catch {
            throw Self.mapError(error, while: what())
        }
    }

    /// A single-statement read outside an explicit transaction (SQLite's own statement
    /// transaction isolates it), on the writer connection. Only for bodies that run ONE
    /// SELECT: nothing here may write.
    func readOne<T: Sendable>(
        _ what: @autoclosure () -> String, _ body: @escaping @Sendable (Database) throws -> T
    ) async throws(ConsoleError) -> T {
        do {
            return try Self.synchronously { try pool.writeWithoutTransaction(body) }
        } catch {
            throw Self.mapError(error, while: what())
        }
    }

    /// A write transaction; anything thrown inside rolls it back.
    func write<T: Sendable>(
        _ what: @autoclosure () -> String, _ body: @escaping @Sendable (Database) throws -> T
    ) async throws(ConsoleError) -> T {
        do {
            return try Self.synchronously { try pool.write(body) }
        } catch {
            throw Self.mapError(error, while: what())
        }
    }

    /// Runs `access` outside any async context, so GRDB's synchronous API is the one called.
    private static func synchronously<T>(_ access: () throws -> T) throws -> T { try access() }

    /// The debug-build crash points inside transactions (``crashPoint``).
    enum CrashPoint: String {
        /// In ``recordServiceReset(tenant:tokenHash:backupId:subOrgIds:now:audit:)``: the copy
        /// deleted and the sub-orgs queued, not committed (the reset's `wiped` checkpoint).
        case resetWiped = "wiped"
    }

    /// `_exit(137)` when this is a debug build opened with `crashPoint` naming `point`.
    func crashAt(_ point: CrashPoint) {
        #if DEBUG
            if crashPoint == point.rawValue { _exit(137) }
        #endif
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
