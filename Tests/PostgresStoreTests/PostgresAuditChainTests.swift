import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Testing

@testable import PostgresStore

/// The audit chain with writers in several processes: two pools on one database stand for two
/// servers, and many tasks in each append at once.
@Suite(.enabled(if: PostgresTestDatabase.enabled, Comment(rawValue: PostgresTestDatabase.skipped)))
struct PostgresAuditChainTests {
    static let tasksPerServer = 8
    static let entriesPerTask = 50

    @Test func concurrentWritersFromTwoServersMakeOneGapFreeChain() async throws {
        try await withTwoServers { first, second in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (server, store) in [("one", first), ("two", second)] {
                    for task in 0..<Self.tasksPerServer {
                        group.addTask {
                            for index in 0..<Self.entriesPerTask {
                                try await store.appendAudit(
                                    AuditDraft(
                                        operatorName: "\(server)-\(task)", tenant: "alpha", action: "backup.show",
                                        target: "b\(index)"))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let total = 2 * Self.tasksPerServer * Self.entriesPerTask
            let entries = try await first.auditEntries(tenant: nil, afterSeq: 0, limit: total + 1)
            #expect(entries.count == total)
            #expect(entries.map(\.seq) == Array(1...Int64(total)))
            var previous = AuditEntry.genesisHash
            for entry in entries {
                #expect(entry.prevHash == previous, "entry \(entry.seq) does not chain to its predecessor")
                #expect(entry.hash == SHA256.hex(Array(entry.prevHash.utf8) + entry.canonicalBytes))
                previous = entry.hash
            }
            // Each task's entries are all there, in its own order.
            for server in ["one", "two"] {
                for task in 0..<Self.tasksPerServer {
                    let targets = entries.filter { $0.operatorName == "\(server)-\(task)" }.map(\.target)
                    #expect(targets == (0..<Self.entriesPerTask).map { "b\($0)" })
                }
            }
        }
    }

    @Test func racingSignersChainEachCheckpointToADistinctPredecessor() async throws {
        try await withTwoServers { first, second in
            try await first.appendAudit(AuditDraft(operatorName: "bob", tenant: nil, action: "init"))
            let rounds = 10
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (signer, store) in [("one", first), ("two", second)] {
                    for task in 0..<4 {
                        group.addTask {
                            for round in 0..<rounds {
                                // New entries between checkpoints, so heads differ too.
                                try await store.appendAudit(
                                    AuditDraft(operatorName: signer, tenant: nil, action: "tick", target: "\(round)"))
                                _ = try await signCheckpoint(store, signer: "\(signer)\(task)")
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let checkpoints = try await second.auditCheckpoints()
            #expect(checkpoints.count == 2 * 4 * rounds)
            #expect(Set(checkpoints.map(\.prevCheckpointHash)).count == checkpoints.count)
            var previous = AuditEntry.genesisHash
            for checkpoint in checkpoints {
                #expect(checkpoint.prevCheckpointHash == previous)
                previous = checkpoint.hash
            }
            #expect(zip(checkpoints, checkpoints.dropFirst()).allSatisfy { $0.seq <= $1.seq })
        }
    }
}

/// Two stores on one fresh database, each with a pool of its own (4 connections).
func withTwoServers(_ body: (PostgresConsoleStore, PostgresConsoleStore) async throws -> Void)
    async throws
{
    try await PostgresTestDatabase.make { testDatabase in
        let one = PostgresStoreDatabase(configuration: try testDatabase.configuration(query: "pool_size=4"))
        let two = PostgresStoreDatabase(configuration: try testDatabase.configuration(query: "pool_size=4"))
        try await one.start()
        try await two.start()
        do {
            let first = try await PostgresConsoleStore.open(one)
            let second = try await PostgresConsoleStore.open(two)
            try await body(first, second)
        } catch {
            await one.shutdown()
            await two.shutdown()
            throw error
        }
        await one.shutdown()
        await two.shutdown()
    }
}
