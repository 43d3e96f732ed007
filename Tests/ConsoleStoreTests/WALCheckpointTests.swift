import BackupModel
import Foundation
import GRDB
import Synchronization
import Testing

@testable import ConsoleStore
@testable import SQLiteStore

/// `backupctl serve` checkpoints the WAL in the background: commits no longer checkpoint, a
/// background turn copies their pages into the database file, and stopping restores SQLite's
/// default and takes a last checkpoint.
@Suite struct WALCheckpointTests {
    func databaseFileSize(_ store: SQLiteConsoleStore) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: store.path)[.size] as? Int ?? 0
    }

    /// Audit entries enough to add pages to the database file (each a commit of its own).
    func appendEntries(_ store: SQLiteConsoleStore, _ count: Int) async throws {
        for index in 0..<count {
            _ = try await store.appendAudit(
                AuditDraft(
                    operatorName: "tester", tenant: "alpha", action: "backup.show", target: "backup-\(index)",
                    details: ["padding": String(repeating: "x", count: 200)]))
        }
    }

    @Test func commitsDoNotCheckpointAndStoppingTakesTheLastCheckpoint() async throws {
        try await withStore { store, _ in
            #expect(try await store.automaticCheckpointPages() == 1000)
            // Bring the file up to date first, so only what follows can grow it.
            _ = try await store.pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
            let (events, emit) = AsyncStream.makeStream(of: CheckpointEvent.self)
            let upkeep = Task { await store.checkpointInBackground(every: .seconds(3600)) { emit.yield($0) } }
            var iterator = events.makeAsyncIterator()
            #expect(await iterator.next() == .started)
            #expect(try await store.automaticCheckpointPages() == 0)
            let before = try databaseFileSize(store)
            try await appendEntries(store, 1500)
            // Well past SQLite's 1000 pages of WAL, and no commit copied a page into the file.
            #expect(try databaseFileSize(store) == before)
            upkeep.cancel()
            await upkeep.value
            #expect(try await store.automaticCheckpointPages() == 1000)
            #expect(try databaseFileSize(store) > before)
        }
    }

    @Test func backgroundTurnsCopyTheCommitsIntoTheFile() async throws {
        try await withStore { store, _ in
            _ = try await store.pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
            let (events, emit) = AsyncStream.makeStream(of: CheckpointEvent.self)
            let upkeep = Task { await store.checkpointInBackground(every: .milliseconds(2)) { emit.yield($0) } }
            defer { upkeep.cancel() }
            var iterator = events.makeAsyncIterator()
            #expect(await iterator.next() == .started)
            let before = try databaseFileSize(store)
            try await appendEntries(store, 300)
            var turns = 0
            while try databaseFileSize(store) == before, turns < 10_000, await iterator.next() == .checkpointed {
                turns += 1
            }
            #expect(try databaseFileSize(store) > before, "no background checkpoint after \(turns) turns")
            #expect(try await store.automaticCheckpointPages() == 0)
        }
    }

    /// The WAL's frames now, through a connection of the test's own (`PASSIVE` copies what it
    /// can and reports the log's length).
    func walFrames(_ store: SQLiteConsoleStore) throws -> Int {
        let probe = try DatabaseQueue(path: store.path)
        defer { try? probe.close() }
        return try probe.writeWithoutTransaction { db in
            try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(PASSIVE)")?[1] ?? -1
        }
    }

    /// Under a stream of commits, a turn's checkpoint copies every frame yet the WAL never
    /// started over: the commit running while it ran began before the copy finished, so the
    /// next one still found frames uncopied (650 MB of WAL after 20 s of served lookups). A
    /// turn over a long WAL therefore copies the rest holding the writer, and the next commit
    /// writes at the WAL's beginning again.
    @Test func aLongWALIsCaughtUpHoldingTheWriterAndStartsOver() async throws {
        try await withStore { store, _ in
            try await store.setAutomaticCheckpoints(pages: 0)
            #expect(
                try await store.readOne("journal_size_limit") { db in
                    try Int.fetchOne(db, sql: "PRAGMA journal_size_limit")
                } == SQLiteConsoleStore.walSizeLimitBytes)
            try await appendEntries(store, 200)
            // Read off the file: a look through SQLite would copy the frames.
            let walSize = try FileManager.default.attributesOfItem(atPath: store.path + "-wal")[.size] as? Int ?? 0
            let long = (walSize - 32) / (4096 + 24)
            #expect(long >= 200)
            let checkpointer = try DatabaseQueue(path: store.path)
            defer { try? checkpointer.close() }

            // A commit in flight across the turn's first pass: begun before it, committed after.
            let (proceed, go) = AsyncStream.makeStream(of: Void.self)
            let (begun, began) = AsyncStream.makeStream(of: Void.self)
            let inFlight = Task {
                try await store.driver.transaction("a commit in flight") { session in
                    try await session.execute("UPDATE access_version SET version = version + 1 WHERE id = 1")
                    began.yield()
                    var waiting = proceed.makeAsyncIterator()
                    _ = await waiting.next()
                }
            }
            var beginning = begun.makeAsyncIterator()
            _ = await beginning.next()
            let seen = Mutex<[CheckpointEvent]>([])
            let heldDuringCatchUp = Mutex<Bool?>(nil)
            await store.checkpointTurn(checkpointer, catchUpPages: 100) { event in
                seen.withLock { $0.append(event) }
                switch event {
                case .catchingUp: go.yield()
                // The catch-up pass runs with the writer held by the turn.
                case .caughtUp:
                    let free = store.driver.gate.tryAcquire()
                    if free { store.driver.gate.release() }
                    heldDuringCatchUp.withLock { $0 = !free }
                default: break
                }
            }
            go.yield()
            try await inFlight.value
            #expect(seen.withLock { $0.count } == 2)
            #expect(heldDuringCatchUp.withLock { $0 } == true)

            // The next commit starts the WAL over: a few frames, not the 200 commits' and more.
            try await appendEntries(store, 1)
            let after = try walFrames(store)
            #expect(after < 10, "the WAL did not start over: \(after) frames after \(long)")
        }
    }

    @Test func aShortWALIsLeftToTheBackgroundPass() async throws {
        try await withStore { store, _ in
            try await store.setAutomaticCheckpoints(pages: 0)
            try await appendEntries(store, 20)
            let checkpointer = try DatabaseQueue(path: store.path)
            defer { try? checkpointer.close() }
            let seen = Mutex<[CheckpointEvent]>([])
            await store.checkpointTurn(checkpointer, catchUpPages: 1000) { event in seen.withLock { $0.append(event) } }
            #expect(seen.withLock { $0 }.isEmpty)
            // The writer was never taken: it is free now.
            #expect(store.driver.gate.tryAcquire())
            store.driver.gate.release()
        }
    }
}
