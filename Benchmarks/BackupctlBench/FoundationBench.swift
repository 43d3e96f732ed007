import Access
import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import SQLiteStore

/// The audit log's cost: appends per second (each its own write transaction with the chain
/// hash) and verification speed, beside the raw SHA-256 chain computation alone.
struct FoundationBench: BenchSuite {
    let name = "foundation"

    func run(_ scale: BenchScale) async throws -> [String: BenchValue] {
        let directory = scratchDirectory("foundation")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteConsoleStore(path: directory.appendingPathComponent("c.db").path)
        let appends = scale.pick(20_000, quick: 500)
        let draft = AuditDraft(operatorName: "bench", tenant: "sandbox", action: "backup.show", target: "backup_x")
        let appendSeconds = try await timeSeconds {
            for _ in 0..<appends { try await store.appendAudit(draft) }
        }
        let verifySeconds = try await timeSeconds {
            let result = try await AuditLog.verify(store: store)
            precondition(result.ok, "bench chain must verify")
        }
        // Reference: the chain hashing alone, no storage.
        let entries = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: appends)
        let hashSeconds = timeSeconds {
            var prev = AuditEntry.genesisHash
            for entry in entries { prev = SHA256.hex(Array(prev.utf8) + Array(entry.canonicalBytes)) }
            precondition(!prev.isEmpty)
        }
        return [
            "auditAppendsPerSecond": .number(Double(appends) / appendSeconds),
            "auditVerifyEntriesPerSecond": .number(Double(appends) / verifySeconds),
            "referenceChainHashesPerSecond": .number(Double(appends) / hashSeconds),
            "verifyVsHashOnlyRatio": .number(verifySeconds / hashSeconds),
        ]
    }
}
