import BackupModel
import Foundation
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
}
