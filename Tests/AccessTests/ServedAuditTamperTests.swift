import Access
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Testing

/// The tamper suite through the real binary: a store signed by `backupctl serve --audit-key K
/// --audit-witness W`, tampered with on the file while no server runs. `audit verify
/// --public-key --anchor W` reports every variant, and a restarted server refuses a chain that
/// does not extend its key's high-water mark (naming both heads), or else keeps it found.
///
/// One template store is signed once for the suite (``ServedTemplate``); each variant works on
/// a copy of its directory.
@Suite(
    .enabled(if: BackupctlBinary.exists, "build the backupctl binary first: swift build --build-tests"),
    .timeLimit(.minutes(10)), ServedTemplate.Scope())
struct ServedAuditTamperTests {
    @Test(
        "every variant is found through the binary; a restarted server refuses it or keeps it found",
        arguments: AuditTamper.all)
    func variant(_ tamper: AuditTamper) async throws {
        let copy = try ServedTemplate.current().copy()
        defer { copy.remove() }
        let before = try await copy.file.contents()
        try await tamper.apply(copy.file)
        #expect(try await copy.file.contents() != before, "the variant changed nothing")
        let verified = try await copy.run(copy.verify, mode: .file)
        #expect(verified.status == 1, "\(verified.stdout) \(verified.stderr)")
        #expect(CLI.json(verified.stdout)?["ok"] as? Bool == false)
        #expect(verified.stderr.contains(#""code":"audit_"#) && verified.stderr.split(separator: "\n").count == 1)

        let mark = try copy.highWaterMark()
        guard tamper.extendsHighWaterMark else {
            let refusal = try await copy.refusedStart()
            #expect(refusal.contains("audit_chain_diverged"), "\(refusal)")
            #expect(refusal.contains(AuditSigner.short(mark.headHash)), "\(refusal)")
            if let found = try await copy.file.entry(mark.seq), found.hash != mark.headHash {
                #expect(refusal.contains(AuditSigner.short(found.hash)), "the store's head is not named: \(refusal)")
            }
            return
        }
        // It starts: six requests (a checkpoint is due), then verify through it — still found.
        let server = try await copy.serve()
        defer { server.killNow() }
        let after = try await copy.run(
            ServedWorkspace.requests(6) + copy.verifyLine, mode: .server(server.url))
        #expect(after.status == (tamper.bypassesSigner ? 0 : 1), "\(after.stdout) \(after.stderr)")
        // The last line is the verification's (the stats before it all answered).
        #expect(after.lines.count == 7 && CLI.json(after.lines[6])?["ok"] as? Bool == tamper.bypassesSigner)
        #expect(await server.stop() == .exited(0))
    }

    @Test("laundering: without the high-water mark the witness still refuses; without both, the anchor finds it")
    func laundering() async throws {
        let copy = try ServedTemplate.current().copy()
        defer { copy.remove() }
        let mark = try copy.highWaterMark()
        try await copy.file.rewriteAndRecompute(7)
        try copy.file.sql("DELETE FROM audit_checkpoints")
        let forged = try #require(try await copy.file.entry(mark.seq)).hash
        // Whoever rewrote the store also removed the key's high-water mark: the witness refuses.
        try FileManager.default.removeItem(atPath: copy.key + ".hwm")
        let refusal = try await copy.refusedStart()
        #expect(refusal.contains("audit_chain_diverged") && refusal.contains(copy.witness), "\(refusal)")
        #expect(refusal.contains(AuditSigner.short(mark.headHash)), "\(refusal)")
        #expect(refusal.contains(AuditSigner.short(forged)), "\(refusal)")

        // And the witness the server writes to as well; an off-host copy of it is the anchor.
        let offHost = copy.directory.appendingPathComponent("siem-copy.jsonl").path
        try FileManager.default.moveItem(atPath: copy.witness, toPath: offHost)
        let server = try await copy.serve()
        defer { server.killNow() }
        let signed = try await copy.run(
            ServedWorkspace.requests(6)
                + ["-c", "audit verify --public-key \(copy.publicKey)"], mode: .server(server.url))
        // The key alone cannot tell: the server signed the forged chain (the issue's laundering).
        #expect(signed.status == 0 && CLI.json(signed.lines.last ?? "")?["ok"] as? Bool == true, "\(signed.stderr)")
        #expect(await server.stop() == .exited(0))
        let anchored = try await copy.run(
            ["audit", "verify", "--public-key", copy.publicKey, "--anchor", offHost], mode: .file)
        #expect(anchored.status == 1, "\(anchored.stdout)")
        #expect(["recomputed_chain", "checkpoint_missing"].contains(CLI.json(anchored.stdout)?["finding"] as? String))
    }

    @Test("a store rewritten while the server runs is never signed, and the restart is refused")
    func rewrittenWhileRunning() async throws {
        let copy = try ServedTemplate.current().copy()
        defer { copy.remove() }
        let server = try await copy.serve()
        defer { server.killNow() }
        let before = try await copy.file.checkpoints().count
        try await copy.file.rewriteAndRecompute(7)
        try copy.file.sql("DELETE FROM audit_checkpoints")
        let after = try await copy.run(
            ServedWorkspace.requests(12) + copy.verifyLine, mode: .server(server.url))
        #expect(after.status == 1, "\(after.stdout) \(after.stderr)")
        #expect(await server.stop() == .exited(0))
        // Neither the requests nor the shutdown signed over the forgery.
        let left = try await copy.file.checkpoints()
        #expect(before > 0 && left.isEmpty)
        let refusal = try await copy.refusedStart()
        #expect(refusal.contains("audit_chain_diverged"), "\(refusal)")
    }
}

/// The signed store every case copies: `init`, `audit keygen`, then `serve --audit-key
/// --audit-witness --checkpoint-entries 5` with ten operators added and a clean stop (a last
/// checkpoint over the head).
struct ServedTemplate: Sendable {
    let directory: URL
    let token: String

    @TaskLocal static var shared: ServedTemplate?

    static func current() throws -> ServedTemplate {
        try #require(shared, "the suite's template was not made")
    }

    /// Makes the template before the suite runs and removes it after.
    struct Scope: SuiteTrait, TestScoping {
        func provideScope(
            for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
        ) async throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("served-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let template = try await ServedTemplate.make(in: directory.appendingPathComponent("template"))
            try await ServedTemplate.$shared.withValue(template) { try await function() }
        }
    }

    static func make(in directory: URL) async throws -> ServedTemplate {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var workspace = ServedWorkspace(directory: directory, token: "")
        let initialized = try await workspace.run(["init", "--admin", "root"], mode: .file)
        workspace.token = try #require(CLI.json(initialized.stdout)?["token"] as? String, "\(initialized.stderr)")
        let keygen = try await workspace.run(["audit", "keygen", "--out", workspace.key], mode: .file)
        let publicKey = try #require(CLI.json(keygen.stdout)?["publicKey"] as? String, "\(keygen.stderr)")
        try Data((publicKey + "\n").utf8).write(to: URL(fileURLWithPath: workspace.publicKey))
        let server = try await workspace.serve()
        defer { server.killNow() }
        // Twenty entries (an operator and its grant each) that the variants swap and reorder.
        let requests = try await workspace.run(
            (0..<10).flatMap { ["-c", "operator add op\($0) --tenant sandbox --role viewer"] },
            mode: .server(server.url))
        try #require(requests.status == 0, "\(requests.stderr)")
        #expect(await server.stop() == .exited(0))
        // The shape the catalogue assumes: the head above 15, signed every 5 and at shutdown.
        let entries = try await workspace.file.entries()
        let checkpoints = try await workspace.file.checkpoints()
        try #require(entries.count >= 20 && checkpoints.count >= 4 && checkpoints.last?.seq == entries.last?.seq)
        try #require(try workspace.highWaterMark() == checkpoints.last)
        try #require(try AuditAnchor.checkpoints(inFile: workspace.witness) == checkpoints)
        let verified = try await workspace.run(workspace.verify, mode: .file)
        try #require(verified.status == 0, "\(verified.stdout) \(verified.stderr)")
        return ServedTemplate(directory: directory, token: workspace.token)
    }

    /// A copy of the template's directory (store, key with its high-water mark, witness).
    func copy() throws -> ServedWorkspace {
        let target = directory.deletingLastPathComponent().appendingPathComponent("case-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: directory, to: target)
        let workspace = ServedWorkspace(directory: target, token: token)
        // A key file must be the owner's alone, whatever the copy kept.
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: workspace.key)
        return workspace
    }
}

/// One directory holding a signed store and its signer's files, and the binary run on it.
struct ServedWorkspace: Sendable {
    enum Mode {
        /// In-process on the store file (`--db`; only reads are allowed on a signed store).
        case file
        /// Through a `serve` at this URL.
        case server(String)
    }

    let directory: URL
    var token: String

    var db: String { directory.appendingPathComponent("console.db").path }
    var key: String { directory.appendingPathComponent("audit.key").path }
    var witness: String { directory.appendingPathComponent("witness.jsonl").path }
    var publicKey: String { directory.appendingPathComponent("audit.pub").path }
    var file: TamperedFile { TamperedFile(path: db) }

    /// `audit verify` with the public key, the witness as anchor and the server's interval.
    var verify: [String] {
        ["audit", "verify", "--public-key", publicKey, "--anchor", witness, "--max-unsigned", "5"]
    }
    var verifyLine: [String] { ["-c", verify.joined(separator: " ")] }

    /// `-c stats` `count` times: one audited request each.
    static func requests(_ count: Int) -> [String] { Array(repeating: ["-c", "stats"], count: count).flatMap { $0 } }

    func highWaterMark() throws -> AuditCheckpoint {
        try #require(try AuditAnchor.checkpoints(inFile: key + ".hwm").last)
    }

    var environment: [String: String] {
        [
            "PATH": "/usr/bin:/bin", "HOME": directory.path, "TERM": "dumb",
            "XDG_STATE_HOME": directory.appendingPathComponent("state").path,
            "XDG_DATA_HOME": directory.appendingPathComponent("data").path,
        ]
    }

    /// `backupctl --format json ARGUMENTS` as root, on the file or through a server.
    func run(_ arguments: [String], mode: Mode) async throws -> ChildResult {
        var environment = environment
        if !token.isEmpty { environment["BACKUPCTL_TOKEN"] = token }
        switch mode {
        case .file: environment["BACKUPCTL_DB"] = db
        case .server(let url): environment["BACKUPCTL_SERVER"] = url
        }
        return try await BackupctlBinary.run(["--format", "json"] + arguments, environment: environment, seconds: 120)
    }

    var serveArguments: [String] {
        [
            "--audit-key", key, "--audit-witness", witness, "--checkpoint-entries", "5", "--checkpoint-seconds",
            "86400",
        ]
    }

    func serve() async throws -> ServerProcess {
        try await ServerProcess.serve(db: db, arguments: serveArguments, environment: environment)
    }

    /// Starts `serve` expecting it to refuse the store: exit 1 before it listens; its stderr.
    func refusedStart() async throws -> String {
        do {
            let server = try await serve()
            server.killNow()
            Issue.record("the server started on a store that does not extend its high-water mark")
            return ""
        } catch let refused as ServerProcess.DidNotStart {
            #expect(refused.termination == .exited(1), "\(refused)")
            return refused.stderr
        }
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

/// The one JSON document of a command's stdout.
enum CLI {
    static func json(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }
}
