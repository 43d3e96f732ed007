import Access
import BackupCrypto
import BackupModel
import ConsoleService
import ConsoleStore
import Foundation
import GRDB
import SQLiteStore
import Testing

/// `audit keygen`, `audit verify --public-key` and `audit export` through the real binary
/// (in-process mode), on a store whose checkpoints were signed the way `backupctl serve
/// --audit-key` signs them: by a ``LocalConsole`` with the key, after each request.
@Suite(.timeLimit(.minutes(10))) struct AuditSigningCommandTests {
    struct Signed {
        var cli: CLI
        let keyPath: String
        let publicKeyPath: String
        let publicKey: String
        var dbPath: String { cli.environment["BACKUPCTL_DB", default: ""] }
    }

    /// `init`, `audit keygen`, then ten `stats` requests through a signing console (a checkpoint
    /// every 4 entries): entries 1…11, checkpoints at 2, 6 and 10.
    func signedStore() async throws -> Signed {
        var cli = CLI()
        let token = try await cli.bootstrap()
        let keyPath = cli.directory.appendingPathComponent("audit.key").path
        let keygen = try await cli.run(["--format", "json", "audit", "keygen", "--out", keyPath])
        #expect(keygen.status == 0, "\(keygen.stderr)")
        let publicKey = try #require(CLI.json(keygen.stdout)?["publicKey"] as? String)
        let publicKeyPath = cli.directory.appendingPathComponent("audit.pub").path
        try Data((publicKey + "\n").utf8).write(to: URL(fileURLWithPath: publicKeyPath))
        let console = try LocalConsole(
            storePath: cli.environment["BACKUPCTL_DB", default: ""], auditKeyPath: keyPath, auditCheckpointEvery: 4)
        let caller = Caller(token: try OperatorToken.parse(Array(token.utf8)), tenant: "sandbox")
        for _ in 0..<10 { _ = try await console.perform(StatsOperation(), as: caller) }
        return Signed(cli: cli, keyPath: keyPath, publicKeyPath: publicKeyPath, publicKey: publicKey)
    }

    func checkpointSeqs(_ signed: Signed) throws -> [Int64] {
        try DatabaseQueue(path: signed.dbPath).read { db in
            try Int64.fetchAll(db, sql: "SELECT seq FROM audit_checkpoints ORDER BY id")
        }
    }

    @Test func keygenWritesAnOwnerOnlyKeyAndNeverPrintsIt() async throws {
        let cli = CLI()
        defer { cli.cleanUp() }
        // Local: no token and no store needed, and none is created.
        for (index, format) in ["table", "json"].enumerated() {
            let path = cli.directory.appendingPathComponent("key\(index)").path
            let result = try await cli.run(["--format", format, "audit", "keygen", "--out", path])
            #expect(result.status == 0, "\(result.stderr)")
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            let secret = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .newlines)
            #expect(secret.count == 64)
            #expect(!result.stdout.lowercased().contains(secret) && !result.stderr.lowercased().contains(secret))
            let expected = try AuditPublicKey(
                bytes: try P256.publicKey(privateKey: try AuditKeyFile.load(path), compressed: true))
            #expect(result.stdout.contains(expected.publicKey) && result.stdout.contains(expected.fingerprint))
            if format == "json" {
                let object = try #require(CLI.json(result.stdout))
                #expect(Set(object.keys) == ["keyFile", "publicKey", "fingerprint"])
                #expect(object["publicKey"] as? String == expected.publicKey)
            }
        }
        #expect(!FileManager.default.fileExists(atPath: cli.environment["BACKUPCTL_DB", default: ""]))
        // An existing file is never replaced.
        let path = cli.directory.appendingPathComponent("key0").path
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let again = try await cli.run(["audit", "keygen", "--out", path])
        #expect(again.status == 1 && again.stdout.isEmpty)
        #expect(again.stderr.split(separator: "\n").count == 1 && again.stderr.contains("key_file_exists"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func aTruncatedTailIsFoundWithThePublicKeyOnly() async throws {
        let signed = try await signedStore()
        defer { signed.cli.cleanUp() }
        let cli = signed.cli
        #expect(try checkpointSeqs(signed) == [2, 6, 10])
        let intact = try await cli.run(["--format", "json", "audit", "verify", "--public-key", signed.publicKeyPath])
        #expect(intact.status == 0, "\(intact.stderr)")
        let report = try #require(CLI.json(intact.stdout))
        #expect(report["ok"] as? Bool == true && report["entries"] as? Int == 11)
        #expect(report["checkpointsVerified"] as? Int == 3 && report["uncoveredEntries"] as? Int == 1)

        // Someone with the file deletes the last three entries: the chain alone still verifies.
        try await DatabaseQueue(path: signed.dbPath).write {
            try $0.execute(sql: "DELETE FROM audit WHERE seq >= 9")
        }
        let keyless = try await cli.run(["--format", "json", "audit", "verify"])
        #expect(keyless.status == 0 && CLI.json(keyless.stdout)?["ok"] as? Bool == true)

        let json = try await cli.run(["--format", "json", "audit", "verify", "--public-key", signed.publicKeyPath])
        #expect(json.status == 1)
        let broken = try #require(CLI.json(json.stdout))
        #expect(broken["ok"] as? Bool == false && broken["finding"] as? String == "truncated_tail")
        #expect(broken["firstBadSeq"] as? Int == 10 && broken["entries"] as? Int == 8)
        #expect(json.stderr.contains("audit_truncated_tail") && json.stderr.split(separator: "\n").count == 1)
        let table = try await cli.run(["audit", "verify", "--public-key", signed.publicKeyPath])
        #expect(table.status == 1)
        #expect(table.stdout.contains("entries were removed from the tail"), "\(table.stdout)")
        #expect(table.stderr.contains("truncated tail"))
    }

    @Test func aRewrittenEntryWithTheChainRecomputedIsFound() async throws {
        let signed = try await signedStore()
        defer { signed.cli.cleanUp() }
        let cli = signed.cli
        // Rewrite entry 4 and recompute every hash after it, as an attacker with the file can.
        let store = try SQLiteConsoleStore(path: signed.dbPath)
        var entries = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 100)
        var previous = AuditEntry.genesisHash
        for index in entries.indices {
            if entries[index].seq == 4 { entries[index].target = "someone-else" }
            entries[index].prevHash = previous
            entries[index].hash = SHA256.hex(Array(previous.utf8) + Array(entries[index].canonicalBytes))
            previous = entries[index].hash
        }
        let rewritten = entries
        try await DatabaseQueue(path: signed.dbPath).write { db in
            for entry in rewritten where entry.seq >= 4 {
                try db.execute(
                    sql: "UPDATE audit SET target = ?, prev_hash = ?, hash = ? WHERE seq = ?",
                    arguments: [entry.target, entry.prevHash, entry.hash, entry.seq])
            }
        }
        let keyless = try await cli.run(["--format", "json", "audit", "verify"])
        #expect(keyless.status == 0 && CLI.json(keyless.stdout)?["ok"] as? Bool == true)

        let result = try await cli.run(["--format", "json", "audit", "verify", "--public-key", signed.publicKeyPath])
        #expect(result.status == 1)
        let broken = try #require(CLI.json(result.stdout))
        #expect(broken["finding"] as? String == "recomputed_chain" && broken["firstBadSeq"] as? Int == 6)
        #expect(result.stderr.contains("audit_recomputed_chain"))
        // A key that did not sign them refuses the first checkpoint.
        let otherKey = cli.directory.appendingPathComponent("other.key").path
        let other = try #require(
            CLI.json(try await cli.run(["--format", "json", "audit", "keygen", "--out", otherKey]).stdout))
        let otherPub = cli.directory.appendingPathComponent("other.pub").path
        try Data((other["publicKey"] as? String ?? "").utf8).write(to: URL(fileURLWithPath: otherPub))
        let forged = try await cli.run(["--format", "json", "audit", "verify", "--public-key", otherPub])
        #expect(forged.status == 1 && CLI.json(forged.stdout)?["finding"] as? String == "bad_signature")
        let unreadable = try await cli.run([
            "audit", "verify", "--public-key", cli.directory.appendingPathComponent("no").path,
        ])
        #expect(unreadable.status == 1 && unreadable.stderr.contains("invalid_public_key"))
    }

    @Test func exportWritesJSONLinesEndingWithTheNewestCheckpoint() async throws {
        let signed = try await signedStore()
        defer { signed.cli.cleanUp() }
        let cli = signed.cli
        let result = try await cli.run(["audit", "export", "--since", "1h"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.lines
        #expect(lines.count == 12)
        var previous = AuditEntry.genesisHash
        for (index, line) in lines.dropLast().enumerated() {
            let object = try #require(CLI.json(line), "not JSON: \(line)")
            #expect(
                Set(object.keys) == [
                    "type", "seq", "time", "operator", "tenant", "action", "target", "details", "hash", "prevHash",
                ])
            #expect(object["type"] as? String == "entry" && object["seq"] as? Int == index + 1)
            #expect(object["prevHash"] as? String == previous)
            previous = object["hash"] as? String ?? ""
        }
        let last = try #require(lines.last)
        guard case .checkpoint(let checkpoint) = try JSONDecoder().decode(AuditExportLine.self, from: Data(last.utf8))
        else {
            Issue.record("the last line is not a checkpoint: \(last)")
            return
        }
        #expect(checkpoint.seq == 10)
        #expect(checkpoint.isSigned(by: try AuditPublicKey(text: signed.publicKey).bytes))
        // Every entry line decodes to an entry whose hash recomputes from its fields.
        for line in lines.dropLast() {
            guard case .entry(let entry) = try JSONDecoder().decode(AuditExportLine.self, from: Data(line.utf8)) else {
                Issue.record("not an entry: \(line)")
                continue
            }
            #expect(SHA256.hex(Array(entry.prevHash.utf8) + Array(entry.canonicalBytes)) == entry.hash)
        }

        // To a file: the same lines, mode 600, and a summary on stdout.
        let file = cli.directory.appendingPathComponent("audit.jsonl").path
        let toFile = try await cli.run(["--format", "json", "audit", "export", "--since", "1h", "--out", file])
        #expect(toFile.status == 0, "\(toFile.stderr)")
        let summary = try #require(CLI.json(toFile.stdout))
        #expect(summary["entries"] as? Int == 11 && summary["checkpointSeq"] as? Int == 10)
        #expect(try String(contentsOfFile: file, encoding: .utf8) == lines.joined(separator: "\n") + "\n")
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        // Nothing since the future but the newest checkpoint; a bad time is one line of error.
        let future = try await cli.run(["audit", "export", "--since", "2999-01-01"])
        #expect(future.status == 0 && future.lines.count == 1 && future.stdout.contains(#""type":"checkpoint""#))
        let bad = try await cli.run(["audit", "export", "--since", "yesterday"])
        #expect(bad.status == 1 && bad.stderr.contains("invalid_since"))
    }

    /// A signing console's own high-water mark is evidence `audit verify` checks: a tail cut
    /// back to within the unsigned allowance, its checkpoints with it, is found, although the
    /// checkpoints left in the store verify.
    @Test func aSigningConsoleVerifiesAgainstItsOwnMark() async throws {
        let signed = try await signedStore()
        defer { signed.cli.cleanUp() }
        try await DatabaseQueue(path: signed.dbPath).write {
            try $0.execute(sql: "DELETE FROM audit WHERE seq >= 7")
            try $0.execute(sql: "DELETE FROM audit_checkpoints WHERE seq >= 6")
        }
        let withKeyOnly = try await signed.cli.run(
            ["--format", "json", "audit", "verify", "--public-key", signed.publicKeyPath])
        #expect(withKeyOnly.status == 0, "the cut is within the allowance: \(withKeyOnly.stdout)")
        let console = try LocalConsole(storePath: signed.dbPath, auditKeyPath: signed.keyPath, auditCheckpointEvery: 4)
        let token = signed.cli.environment["BACKUPCTL_TOKEN", default: ""]
        let caller = Caller(token: try OperatorToken.parse(Array(token.utf8)), tenant: "sandbox")
        let result = try await console.perform(AuditVerifyOperation(publicKeys: []), as: caller)
        #expect(!result.ok && result.finding == "truncated_tail", "\(result)")
        #expect(console.auditSigningError?.code == "audit_chain_diverged")
    }

    /// A `--db` console with the key (BACKUPCTL_AUDIT_KEY) checks the store as a starting
    /// server does before its first operation: entries past the newest checkpoint are recorded
    /// as adopted before anything signs them, even when that operation is a read.
    @Test func aConsoleWithTheKeyRecordsAnUnsignedTailBeforeItSigns() async throws {
        let signed = try await signedStore()
        defer { signed.cli.cleanUp() }
        let console = try LocalConsole(storePath: signed.dbPath, auditKeyPath: signed.keyPath, auditCheckpointEvery: 4)
        let token = signed.cli.environment["BACKUPCTL_TOKEN", default: ""]
        let caller = Caller(token: try OperatorToken.parse(Array(token.utf8)), tenant: "sandbox")
        let result = try await console.perform(AuditVerifyOperation(publicKeys: []), as: caller)
        #expect(result.ok, "\(result)")
        let adopted = try await SQLiteConsoleStore(path: signed.dbPath).auditEntries(
            tenant: nil, afterSeq: 0, limit: 1000
        ).filter { $0.action == "audit.unsigned_tail" }
        #expect(adopted.map { $0.details["firstSeq"] } == ["11"], "\(adopted)")
    }

    @Test func exportIsForAdminsOnly() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let added = try await cli.run([
            "--format", "json", "operator", "add", "vera", "--tenant", "sandbox", "--role", "viewer",
        ])
        let token = try #require(CLI.json(added.stdout)?["token"] as? String, "\(added.stderr)")
        let denied = try await cli.run(
            ["audit", "export", "--since", "1h"], extraEnvironment: ["BACKUPCTL_TOKEN": token])
        #expect(denied.status == 77 && denied.stdout.isEmpty)
    }
}
