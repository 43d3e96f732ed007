import BackupCrypto
import BackupModel
import BackupctlTestSupport
import Foundation
import Testing

@testable import ConsoleStore

/// Seeded random exports (fixed seeds, bounded iterations, a few seconds): the import parser
/// never traps, refuses with exactly one reason per bad backup or row, and whatever it accepts
/// is within the service's limits and survives the store's round trip.
@Suite("Import parser fuzz")
struct ImportFuzzTests {
    /// Values a crafted export puts where a field was.
    static var poison: [Any] { poisonValues }
    nonisolated(unsafe) static let poisonValues: [Any] = [
        Int64.min, Int64.max, -1, 0, 1e308, -1e308, 1.5, "", "\u{0}", "\u{1B}]0;x\u{7}", "a\u{202E}b",
        String(repeating: "x", count: 5000), "2026-13-01T00:00:00Z", "9999-12-31T23:59:59-23:59",
        "0000-01-01T00:00:00+01:00", NSNull(), true, [Any](), [String: Any](), "PASSKEY", "OIDC_ACCOUNT",
        "EC_KEYPAIR", "PRF", "TURNKEY", "GOOGLE", "backup_account_", "MAIN#PK|",
        "0x" + String(repeating: "a", count: 64),
    ]

    struct Stream {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
        mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
    }

    /// Replaces, duplicates or drops one value somewhere in a JSON tree.
    static func mutate(_ value: Any, _ rng: inout Stream, depth: Int = 0) -> Any {
        if depth > 0, rng.below(4) == 0 { return rng.pick(poison) }
        switch value {
        case var object as [String: Any] where !object.isEmpty:
            let key = object.keys.sorted()[rng.below(object.count)]
            switch rng.below(6) {
            case 0: object.removeValue(forKey: key)
            case 1: object[key + rng.pick(["", "\u{0}", "X"])] = rng.pick(poison)
            default: object[key] = mutate(object[key] as Any, &rng, depth: depth + 1)
            }
            return object
        case var array as [Any] where !array.isEmpty:
            let i = rng.below(array.count)
            switch rng.below(5) {
            case 0: array.append(contentsOf: Array(repeating: array[i], count: 1 + rng.below(30)))
            case 1: array.remove(at: i)
            default: array[i] = mutate(array[i], &rng, depth: depth + 1)
            }
            return array
        default:
            return rng.pick(poison)
        }
    }

    /// Flips, inserts or cuts bytes: what a broken file looks like.
    static func corrupt(_ data: Data, _ rng: inout Stream) -> Data {
        var bytes = [UInt8](data)
        for _ in 0..<(1 + rng.below(4)) where !bytes.isEmpty {
            let i = rng.below(bytes.count)
            switch rng.below(3) {
            case 0: bytes[i] ^= UInt8(truncatingIfNeeded: 1 << rng.below(8))
            case 1: bytes.insert(rng.pick([0x00, 0x1B, 0x22, 0x5C, 0x7B, 0xC3, 0xFF]), at: i)
            default: bytes.removeSubrange(i..<min(bytes.count, i + 1 + rng.below(8)))
            }
        }
        return Data(bytes)
    }

    @Test("metadata: refused with one reason, or valid and round-tripping", arguments: [11, 12, 13] as [UInt64])
    func metadata(seed: UInt64) throws {
        var rng = Stream(state: seed)
        let f = Fixtures(seed: seed)
        var accepted = 0
        var refused = 0
        for round in 0..<700 {
            let base = f.metadata(
                id: f.backupId(), passkeys: [f.credential()], googleSubs: ["104\(round)"], subOrgs: [f.uuid()],
                sync: ["BAAA\(round)"])
            let form: MetadataForm = rng.below(2) == 0 ? .stored : .exported
            let tree = try JSONSerialization.jsonObject(with: base.encoded(form))
            let data: Data
            if rng.below(4) == 0 {
                data = Self.corrupt(base.encoded(form), &rng)
            } else {
                data = try JSONSerialization.data(withJSONObject: Self.mutate(tree, &rng), options: [.fragmentsAllowed])
            }
            do {
                let metadata = try BackupMetadata.decode(data)
                try metadata.validate()
                accepted += 1
                // What is accepted is storable: its stored form decodes to the same metadata.
                #expect(try BackupMetadata.decode(metadata.encoded(.stored)) == metadata)
                for factor in metadata.factors + metadata.syncFactors {
                    #expect(Timestamp.validSeconds.contains(factor.createdAt.seconds))
                    #expect(!factor.createdAt.description.isEmpty)
                }
            } catch {
                refused += 1
                #expect(!error.code.isEmpty && !error.message.isEmpty)
                #expect(!error.message.unicodeScalars.contains(where: UntrustedText.isControl), "\(error.message)")
                #expect(error.message.utf8.count < 600, "\(error.message.prefix(200))")
            }
        }
        #expect(accepted > 20 && refused > 300)
    }

    @Test(
        "whole exports: every backup imported or refused with a reason; rows likewise", arguments: [21, 22] as [UInt64])
    func exports(seed: UInt64) async throws {
        try await withStore { store, dir in
            var rng = Stream(state: seed)
            let f = Fixtures(seed: seed)
            let export = try ExportBuilder(in: dir)
            var lines: [String] = []
            for round in 0..<60 {
                let base = f.metadata(id: f.backupId(), passkeys: [f.credential()], googleSubs: ["9\(round)"])
                let tree = try JSONSerialization.jsonObject(with: base.encoded())
                let data =
                    rng.below(3) == 0
                    ? base.encoded()
                    : try JSONSerialization.data(withJSONObject: Self.mutate(tree, &rng), options: [.fragmentsAllowed])
                try export.addRaw(base.id, metadata: data, blob: rng.below(2) == 0 ? Data([1, 2]) : nil)
                let row = try JSONSerialization.data(withJSONObject: [
                    "PK": base.lookupKeys[0].rawValue, "BackupId": base.id,
                ])
                let bad = Self.corrupt(row, &rng)
                lines.append(String(decoding: rng.below(2) == 0 ? row : bad, as: UTF8.self))
            }
            try Data(lines.joined(separator: "\n").utf8).write(
                to: export.root.appendingPathComponent("factor_lookup.jsonl"))
            let report = try await BackupImporter(store: store) { 1_780_000_000 }.run(
                directory: export.root, tenant: alpha, dryRun: false, operatorName: "fuzz")
            #expect(report.backupsSeen == 60)
            #expect(report.imported + report.unchanged + report.failed == 60)
            let backupProblems = report.problems.filter { !$0.path.hasPrefix("factor_lookup.jsonl") }
            #expect(backupProblems.count + report.conflicts.count >= report.failed)
            #expect(try await store.backupCount(tenant: alpha) == report.imported)
            // Every stored backup reads back and is within the limits.
            var read = 0
            try await store.forEachBackup(tenant: alpha, batchSize: 16) { records throws(ConsoleError) in
                for record in records { try record.metadata.validate() }
                read += records.count
            }
            #expect(read == report.imported)
        }
    }
}
