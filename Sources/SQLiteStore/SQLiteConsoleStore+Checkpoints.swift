import BackupModel
import GRDB

/// What ``SQLiteConsoleStore/checkpointInBackground(every:events:)`` has done.
public enum CheckpointEvent: Sendable, Equatable {
    /// The writer no longer checkpoints; the background connection does.
    case started
    /// A background checkpoint ran.
    case checkpointed
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
    /// - Parameter events: told when checkpoints are off the writer, and after each background
    ///   checkpoint (tests wait on them).
    public func checkpointInBackground(
        every interval: Duration, events: (@Sendable (CheckpointEvent) -> Void)? = nil
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
            // BUSY (another process checkpointing) leaves the frames for the next turn.
            try? await checkpointer.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)")
            }
            events?(.checkpointed)
        }
        // The task is cancelled by now, and GRDB's async calls would refuse to start: these are
        // the synchronous ones.
        try? await setAutomaticCheckpoints(pages: Self.automaticCheckpointPages)
        Self.lastCheckpoint(checkpointer)
    }

    private static func lastCheckpoint(_ checkpointer: DatabaseQueue) {
        try? checkpointer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)") }
        try? checkpointer.close()
    }

    /// SQLite's default: a commit that grows the WAL past this many pages checkpoints it.
    static let automaticCheckpointPages = 1000

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
