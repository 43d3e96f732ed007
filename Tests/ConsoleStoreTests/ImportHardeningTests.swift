import BackupModel
import Foundation
import SQLiteStore
import Testing

@testable import ConsoleStore

/// Crafted exports: each bad backup or index row is refused with its reason, never a crash, and
/// the good backups beside it are imported.
@Suite("Import of hostile exports")
struct ImportHardeningTests {
    func importer(_ store: SQLiteConsoleStore) -> BackupImporter { BackupImporter(store: store) { 1_780_000_000 } }

    /// A valid backup's exported JSON with `edit` applied to it as a dictionary.
    func crafted(_ metadata: BackupMetadata, _ edit: (inout [String: Any]) -> Void) throws -> Data {
        var object = try #require(
            try JSONSerialization.jsonObject(with: metadata.encoded(.exported)) as? [String: Any])
        edit(&object)
        return try JSONSerialization.data(withJSONObject: object)
    }

    func setFirstFactor(_ object: inout [String: Any], _ key: String, _ value: Any) {
        var factors = object["factors"] as? [[String: Any]] ?? []
        factors[0][key] = value
        object["factors"] = factors
    }

    func setFirstKind(_ object: inout [String: Any], _ key: String, _ value: Any) {
        var factors = object["factors"] as? [[String: Any]] ?? []
        var kind = factors[0]["kind"] as? [String: Any] ?? [:]
        kind[key] = value
        factors[0]["kind"] = kind
        object["factors"] = factors
    }

    @Test(
        "createdAt far outside any real date is refused, dry run included, never a trap",
        arguments: [Int64.min, Int64.min + 1, Int64.max, -62_135_596_801, 253_402_300_800])
    func extremeTimestamps(createdAt: Int64) async throws {
        for dryRun in [true, false] {
            try await withStore { store, dir in
                let f = Fixtures()
                let export = try ExportBuilder(in: dir)
                let good = f.metadata(id: f.backupId(), passkeys: [f.credential()])
                try export.add(good, form: .exported)
                let bad = f.metadata(id: f.backupId(), passkeys: [f.credential()])
                try export.addRaw(bad.id, metadata: try crafted(bad) { setFirstFactor(&$0, "createdAt", createdAt) })
                let report = try await importer(store).run(
                    directory: export.root, tenant: alpha, dryRun: dryRun, operatorName: "tester")
                #expect(report.imported == 1 && report.failed == 1)
                #expect(report.problems.map(\.path) == ["\(bad.id)/metadata"])
                #expect(report.problems.first?.code == "invalid_metadata")
                #expect(report.problems.first?.reason.contains("createdAt") == true)
                #expect(try await store.backupExists(tenant: alpha, id: bad.id) == false)
            }
        }
    }

    @Test("formatting any Int64 never traps") func formatIsTotal() {
        for seconds in [Int64.min, Int64.min + 1, -86_400, -1, 0, 86_399, Int64.max - 1, Int64.max] {
            #expect(!Timestamp.format(seconds).isEmpty)
        }
        #expect(Timestamp.format(-1) == "1969-12-31T23:59:59Z")
        #expect(Timestamp(seconds: Timestamp.validSeconds.upperBound).description == "9999-12-31T23:59:59Z")
        #expect(Timestamp(seconds: Timestamp.validSeconds.lowerBound).description == "0001-01-01T00:00:00Z")
    }

    @Test("an index key with a NUL cannot overwrite a real user's row")
    func nulInIndexKey() async throws {
        try await withStore { store, dir in
            let f = Fixtures()
            let export = try ExportBuilder(in: dir)
            let victim = f.metadata(id: f.backupId(), googleSubs: ["1045"])
            let attacker = f.metadata(id: f.backupId(), passkeys: [f.credential()])
            try export.add(victim)
            try export.add(attacker)
            let pk = "MAIN#OIDC|https://accounts.google.com|1045"
            try export.index(
                [(pk, victim.id), (pk + "\\u0000x", attacker.id), ("MAIN#PK|a\\u001b[2Jb", attacker.id)]
                    + attacker.lookupKeys.map { ($0.rawValue, attacker.id) })
            let report = try await importer(store).run(
                directory: export.root, tenant: alpha, dryRun: false, operatorName: "tester")
            #expect(report.imported == 2)
            #expect(report.problems.map(\.path) == ["factor_lookup.jsonl:2", "factor_lookup.jsonl:3"])
            #expect(report.problems.allSatisfy { $0.code == "invalid_lookup_key" })
            #expect(try await store.lookup(tenant: alpha, pk: pk)?.backupId == victim.id)
            #expect(try await store.lookupRows(tenant: alpha, backupId: attacker.id).count == 1)
        }
    }

    @Test(
        "control characters and oversized strings in metadata are refused, naming the field",
        arguments: [
            ("label", "a\u{0}b", "control_character"),
            ("label", "\u{1B}]0;owned\u{7}", "control_character"),
            ("label", "fake\nline", "control_character"),
            ("label", "\u{202E}evil", "control_character"),
            ("label", String(repeating: "x", count: 3_000_000), "string_too_long"),
            ("credentialId", "AQID\u{0}", "invalid_metadata"),
        ])
    func badText(field: String, value: String, code: String) async throws {
        try await withStore { store, dir in
            let f = Fixtures()
            let export = try ExportBuilder(in: dir)
            let bad = f.metadata(id: f.backupId(), passkeys: [f.credential()])
            try export.addRaw(bad.id, metadata: try crafted(bad) { setFirstKind(&$0, field, value) })
            let report = try await importer(store).run(
                directory: export.root, tenant: alpha, dryRun: false, operatorName: "tester")
            #expect(report.failed == 1 && report.imported == 0)
            let problem = try #require(report.problems.first)
            #expect(problem.code == code)
            if code != "invalid_metadata" { #expect(problem.reason.contains("factors[0].\(field)")) }
            #expect(!problem.reason.contains("\u{1B}") && !problem.reason.contains("\u{0}"))
            #expect(problem.reason.utf8.count < 400)
        }
    }

    @Test("the service's limits: factor counts, one key per kind, duplicates, manifest hash, curve point")
    func serviceLimits() async throws {
        try await withStore { store, dir in
            let f = Fixtures()
            let export = try ExportBuilder(in: dir)
            var expected: [String: String] = [:]
            func add(_ m: BackupMetadata, _ code: String) throws {
                try export.add(m)
                expected["\(m.id)/metadata"] = code
            }
            try add(f.metadata(id: f.backupId(), passkeys: (0..<11).map { _ in f.credential() }), "too_many_factors")
            try add(f.metadata(id: f.backupId(), sync: (0..<26).map { "KEY\($0)" }), "too_many_factors")
            var twoKeys = f.metadata(id: f.backupId(), passkeys: [f.credential()])
            twoKeys.keys.append(.prf(encryptedKey: "ee"))
            try add(twoKeys, "duplicate_key_kind")
            let cred = f.credential()
            var copies = f.metadata(id: f.backupId(), passkeys: [cred])
            copies.factors += (0..<4).map { _ in copies.factors[0] }
            try add(copies, "duplicate_factor")
            var sameCredential = f.metadata(id: f.backupId(), passkeys: [f.credential()])
            var twin = sameCredential.factors[0]
            twin.id = f.uuid()
            sameCredential.factors.append(twin)
            try add(sameCredential, "duplicate_factor")
            var badHash = f.metadata(id: f.backupId(), passkeys: [f.credential()])
            badHash.manifestHash = "zz"
            try add(badHash, "invalid_manifest_hash")
            // 0x02 followed by 32 bytes of 0xff: 2^256 - 1 is above the field prime, not an x.
            let offCurve = BackupAccountID(compressedPublicKey: [0x02] + [UInt8](repeating: 0xFF, count: 32)).rawValue
            try export.add(f.metadata(id: offCurve, passkeys: [f.credential()]))
            expected[offCurve] = "invalid_backup_account_id"
            let good = f.metadata(id: f.backupId(), passkeys: [f.credential()], sync: (0..<25).map { "K\($0)" })
            try export.add(good)

            let report = try await importer(store).run(
                directory: export.root, tenant: alpha, dryRun: false, operatorName: "tester")
            #expect(Dictionary(uniqueKeysWithValues: report.problems.map { ($0.path, $0.code) }) == expected)
            #expect(report.imported == 1 && report.failed == expected.count)
            #expect(try await store.backupCount(tenant: alpha) == 1)
        }
    }

    @Test("index rows whose backup id is empty, not an id, or huge are refused")
    func badIndexBackupIds() async throws {
        try await withStore { store, dir in
            let f = Fixtures()
            let export = try ExportBuilder(in: dir)
            let good = f.metadata(id: f.backupId(), passkeys: [f.credential()])
            try export.add(good)
            try export.index(
                good.lookupKeys.map { ($0.rawValue, good.id) } + [
                    ("MAIN#PK|AAAA", ""), ("MAIN#PK|BBBB", "not-an-id"),
                    ("MAIN#PK|CCCC", String(repeating: "a", count: 100_000)),
                    ("MAIN#PK|DDDD", "backup_account_" + String(repeating: "0", count: 30_000)),
                ])
            let report = try await importer(store).run(
                directory: export.root, tenant: alpha, dryRun: false, operatorName: "tester")
            #expect(report.imported == 1)
            #expect(report.problems.map(\.path) == (2...5).map { "factor_lookup.jsonl:\($0)" })
            #expect(
                report.problems.map(\.code) == [
                    "invalid_backup_account_id", "invalid_backup_account_id", "invalid_lookup_row",
                    "invalid_lookup_row",
                ])
            for pk in ["MAIN#PK|AAAA", "MAIN#PK|BBBB", "MAIN#PK|CCCC", "MAIN#PK|DDDD"] {
                #expect(try await store.lookup(tenant: alpha, pk: pk) == nil)
            }
        }
    }

    @Test("a blob that is a symlink, FIFO or directory is a rejection, not a silent skip")
    func blobThatIsNotAFile() async throws {
        try await withStore { store, dir in
            let f = Fixtures()
            let export = try ExportBuilder(in: dir)
            let fm = FileManager.default
            let target = dir.appendingPathComponent("elsewhere")
            try Data([1, 2, 3]).write(to: target)
            var ids: [String: String] = [:]
            for kind in ["symbolic link", "FIFO", "directory"] {
                let m = f.metadata(id: f.backupId(), passkeys: [f.credential()])
                try export.add(m)
                let blob = export.root.appendingPathComponent("\(m.id)/backup")
                switch kind {
                case "symbolic link": try fm.createSymbolicLink(at: blob, withDestinationURL: target)
                case "FIFO": #expect(mkfifo(blob.path, 0o600) == 0)
                default: try fm.createDirectory(at: blob, withIntermediateDirectories: false)
                }
                ids["\(m.id)/backup"] = kind
            }
            // A backup directory that is itself a symlink is refused too.
            let real = f.metadata(id: f.backupId(), passkeys: [f.credential()])
            let outside = try ExportBuilder(in: dir)
            try outside.add(real)
            try fm.createSymbolicLink(
                at: export.root.appendingPathComponent(real.id),
                withDestinationURL: outside.root.appendingPathComponent(real.id))
            let good = f.metadata(id: f.backupId(), passkeys: [f.credential()])
            try export.add(good, blob: Data([9]))

            let report = try await importer(store).run(
                directory: export.root, tenant: alpha, dryRun: false, operatorName: "tester")
            #expect(report.imported == 1 && report.failed == 4)
            for problem in report.problems where problem.path.hasSuffix("/backup") {
                #expect(problem.code == "not_a_regular_file")
                #expect(problem.reason.contains(ids[problem.path] ?? "?"))
            }
            #expect(report.problems.first { $0.path == real.id }?.code == "not_a_directory")
            #expect(try await store.backupCount(tenant: alpha) == 1)
        }
    }

    @Test("an index that is a FIFO is refused without blocking; the backups still import")
    func indexThatIsAFIFO() async throws {
        try await withStore { store, dir in
            let f = Fixtures()
            let export = try ExportBuilder(in: dir)
            let good = f.metadata(id: f.backupId(), passkeys: [f.credential()])
            try export.add(good)
            #expect(mkfifo(export.root.appendingPathComponent("factor_lookup.jsonl").path, 0o600) == 0)
            let report = try await importer(store).run(
                directory: export.root, tenant: alpha, dryRun: false, operatorName: "tester")
            #expect(report.imported == 1)
            #expect(report.problems.map(\.code) == ["not_a_regular_file"])
            #expect(report.problems.first?.reason.contains("FIFO") == true)
        }
    }

    @Test("an export where every backup fails imports nothing and says so per backup")
    func everyBackupFails() async throws {
        try await withStore { store, dir in
            let f = Fixtures()
            let export = try ExportBuilder(in: dir)
            for _ in 0..<3 { try export.addRaw(f.backupId(), metadata: Data("{}".utf8)) }
            let report = try await importer(store).run(
                directory: export.root, tenant: alpha, dryRun: false, operatorName: "tester")
            #expect(report.failed == 3 && report.imported == 0 && report.problems.count == 3)
        }
    }
}
