import BackupModel
import GRDB

/// What ``SQLiteConsoleStore/checkpointInBackground(every:events:)`` has done.
public enum CheckpointEvent: Sendable, Equatable {
    /// The writer no longer checkpoints; the background connection does.
    case started
    /// A background checkpoint ran.
    case checkpointed
    /// After a turn's checkpoint the WAL was still `log` frames long (`copied` of them copied):
    /// it has not started over since, so a second pass runs holding the writer.
    case catchingUp(log: Int, copied: Int)
    /// The catch-up checkpoint ran, with the writer held: the next commit restarts the WAL.
    case caughtUp
}

extension SQLiteConsoleStore {
    /// Takes the WAL's checkpoints off the request path until the calling task is cancelled.
    ///
    /// By default SQLite checkpoints inside the commit that grows the WAL past 1000 pages: that
    /// request then copies pages into the database file and waits for `fsync` twice, a
    /// millisecond or more on top of a lookup of a few hundred microseconds (about 1 request in
    /// 100 under a stream of audited lookups: the p99). `backupctl serve` instead turns the
    /// writer's automatic checkpoints off and runs a `PASSIVE` checkpoint every `interval` on a
    /// connection of its own, which never blocks the writer or a reader. When cancelled it turns
    /// automatic checkpoints back on and takes a last checkpoint, so a stopped server leaves a
    /// short WAL behind. Other processes on the same file (an operator's `--db` console) keep
    /// checkpointing as before.
    /// - Parameters:
    ///   - catchUpPages: a WAL still this long after a turn's checkpoint (SQLite's own
    ///     checkpoint size) is caught up holding the writer (``checkpointTurn(_:catchUpPages:events:)``).
    ///   - events: told when checkpoints are off the writer, and after each background
    ///     checkpoint (tests wait on them).
    public func checkpointInBackground(
        every interval: Duration, catchUpPages: Int = SQLiteConsoleStore.automaticCheckpointPages,
        events: (@Sendable (CheckpointEvent) -> Void)? = nil
    ) async {
        var configuration = Configuration()
        configuration.busyMode = .timeout(1)
        configuration.label = "backupctl.checkpointer"
        let checkpointer: DatabaseQueue
        do {
            checkpointer = try DatabaseQueue(path: path, configuration: configuration)
            try await setAutomaticCheckpoints(pages: 0)
            events?(.started)
        } catch {
            // Without a connection of its own the writer keeps checkpointing as it did.
            while !Task.isCancelled {
                do { try await Task.sleep(for: interval) } catch { return }
            }
            return
        }
        while !Task.isCancelled {
            do { try await Task.sleep(for: interval) } catch { break }
            await checkpointTurn(checkpointer, catchUpPages: catchUpPages, events: events)
            events?(.checkpointed)
        }
        // The task is cancelled by now, and GRDB's async calls would refuse to start: these are
        // the synchronous ones.
        try? await setAutomaticCheckpoints(pages: Self.automaticCheckpointPages)
        Self.lastCheckpoint(checkpointer)
    }

    /// One background turn: a `PASSIVE` checkpoint beside the writer and the readers; and when
    /// the WAL is still `catchUpPages` frames or longer, a second one holding the writer.
    ///
    /// SQLite starts the WAL over (a commit writes at its beginning again) only for a
    /// transaction begun when every frame was copied. Under a steady stream of audited reads a
    /// group commit is always under way: each checkpoint copied every frame, yet the commit
    /// running meanwhile had begun before, appended behind it, and the next found frames
    /// uncopied again. The WAL grew by every commit's pages for as long as the stream lasted
    /// (32 MB/s: 650 MB after 20 s of 12,000 lookups/s). The second pass waits for the commit
    /// under way, copies what it and the others during the first pass added, and lets none of
    /// this process begin meanwhile (reads go on, on the readers): the next commit starts the
    /// WAL over, and `journal_size_limit` cuts a longer file back. It holds the writer for
    /// its two `fsync`s, 2–5 ms a turn under that stream.
    func checkpointTurn(
        _ checkpointer: DatabaseQueue, catchUpPages: Int, events: (@Sendable (CheckpointEvent) -> Void)?
    ) async {
        // BUSY (another process checkpointing) leaves the frames for the next turn.
        guard let (log, copied) = try? await Self.passiveCheckpoint(checkpointer), log >= catchUpPages else { return }
        events?(.catchingUp(log: log, copied: copied))
        await driver.gate.acquire()
        defer { driver.gate.release() }
        _ = try? await Self.passiveCheckpoint(checkpointer)
        events?(.caughtUp)
    }

    /// `PRAGMA wal_checkpoint(PASSIVE)`: the WAL's frames and how many of them are copied
    /// into the database file.
    private static func passiveCheckpoint(_ checkpointer: DatabaseQueue) async throws -> (log: Int, copied: Int) {
        try await checkpointer.writeWithoutTransaction { db in try passiveCheckpoint(db) }
    }

    private static func passiveCheckpoint(_ db: Database) throws -> (log: Int, copied: Int) {
        let row = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(PASSIVE)")
        return (row?[1] ?? 0, row?[2] ?? 0)
    }

    private static func lastCheckpoint(_ checkpointer: DatabaseQueue) {
        try? checkpointer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)") }
        try? checkpointer.close()
    }

    /// SQLite's default: a commit that grows the WAL past this many pages checkpoints it.
    public static let automaticCheckpointPages = 1000

    /// The writer connection's `wal_autocheckpoint` (the only connection that commits): a
    /// setting of the connection, not a write, so it goes where single reads go.
    func setAutomaticCheckpoints(pages: Int) async throws(ConsoleError) {
        try await readOne("setting the WAL's automatic checkpoints") { db in
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(pages)")
        }
    }

    /// The writer connection's `wal_autocheckpoint`.
    public func automaticCheckpointPages() async throws(ConsoleError) -> Int {
        try await readOne("reading the WAL's automatic checkpoints") { db in
            try Int.fetchOne(db, sql: "PRAGMA wal_autocheckpoint") ?? 0
        }
    }
}
