import BackupModel
import ConsoleStore
import Foundation
import Testing

/// Strings that reached the store before import refused them (or from any other way in) are
/// still shown escaped; the pager never sees the console's secrets.
@Suite(.serialized, .timeLimit(.minutes(10))) struct OutputEscapingTests {
    static let id = "backup_account_030b2e4ce2de76318c0ef50964d225910b64019d8e43620d6d166b6bd100ad26e8"

    /// Writes a backup whose label and masked email carry terminal control sequences, behind
    /// the importer's back, as an old store or another writer could hold them.
    func plant(_ cli: CLI) async throws {
        try await cli.withStore { store in try await plant(store) }
    }

    func plant(_ store: any ConsoleStore) async throws {
        let at = Timestamp(seconds: 1_770_000_000)
        let metadata = BackupMetadata(
            id: Self.id, manifestHash: String(repeating: "ab", count: 32),
            factors: [
                Factor(
                    id: "f1", createdAt: at,
                    kind: .passkey(
                        PasskeyFactor(credentialId: "AQIDBA", label: "\u{1B}]0;owned\u{7}Keychain\nfake row"))),
                Factor(
                    id: "f2", createdAt: at,
                    kind: .oidcAccount(
                        OIDCAccountFactor(
                            account: OIDCAccount(provider: .google, sub: "104", maskedEmail: "\u{1B}[2J\u{1B}[Hj***@x"),
                            turnkeyProviderId: nil))),
            ],
            syncFactors: [], keys: [.prf(encryptedKey: "00")])
        let record = BackupRecord(
            backupId: Self.id, metadata: metadata, blobSize: nil, blobSHA256: nil, importedAt: 1, updatedAt: 1)
        try await store.writeBackup(
            tenant: try TenantName("sandbox"),
            BackupWrite(
                record: record, blob: nil,
                lookupRows: metadata.lookupKeys.map { LookupRow(pk: $0.rawValue, backupId: Self.id) }),
            audit: AuditDraft(operatorName: "root", tenant: "sandbox", action: "test.plant"))
    }

    @Test(arguments: CLI.Mode.allCases) func showEscapesWhatCameFromOutside(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        try await plant(cli)
        for color in ["never", "always"] {
            let shown = try await cli.run(["--color", color, "show", Self.id])
            #expect(shown.status == 0, "\(shown.stderr)")
            #expect(shown.stdout.contains(#"\u{1B}]0;owned\u{7}Keychain\nfake row"#))
            #expect(shown.stdout.contains(#"\u{1B}[2J\u{1B}[Hj***@x"#))
            #expect(!shown.stdout.contains("\u{7}") && !shown.stdout.contains("\u{1B}[2J"))
            #expect(!shown.stdout.contains("\nfake row"))
            // With colour, the only escape sequences left are the console's own.
            let sequences = shown.stdout.components(separatedBy: "\u{1B}").dropFirst().map { $0.prefix(4) }
            let allowed = ["[0m", "[1m", "[2m", "[31m", "[32m", "[33m", "[36m"]
            #expect(sequences.allSatisfy { sequence in allowed.contains { sequence.hasPrefix($0) } })
            if color == "never" { #expect(!shown.stdout.contains("\u{1B}")) }
        }
        let json = try await cli.run(["--format", "json", "show", Self.id])
        let object = try #require(CLI.json(json.stdout))
        let factors = object["factors"] as? [[String: Any]]
        #expect(factors?.first?["label"] as? String == "\u{1B}]0;owned\u{7}Keychain\nfake row")
        #expect(!json.stdout.contains("\u{1B}"))
    }

    @Test(arguments: CLI.Mode.allCases) func thePagerRunsWithoutTheConsoleSecrets(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        let token = try await cli.bootstrap()
        // Enough audit entries for `audit list` to outgrow the 40-row terminal.
        let adds = (0..<30).flatMap { ["-c", "operator add user\($0) --tenant sandbox --role viewer"] }
        #expect(try await cli.run(adds).status == 0)
        let dump = cli.directory.appendingPathComponent("pager-env").path
        let pty = try PTY(
            arguments: [],
            environment: cli.environment.merging([
                "TERM": "xterm", "PAGER": "env > '\(dump)'; cat", "GITHUB_TOKEN": "gh-secret", "LESS": "-R",
            ]) { $1 })
        #expect(await pty.expect("> "))
        pty.send("audit list --limit 70\r")
        #expect(await pty.expect("operator.grant"))
        pty.send("quit\r")
        #expect(await pty.waitForExit())
        let environment = try String(contentsOfFile: dump, encoding: .utf8)
        #expect(environment.contains("LESS=-R") && environment.contains("TERM=xterm"))
        #expect(!environment.contains(token) && !environment.contains("BACKUPCTL_TOKEN"))
        #expect(!environment.contains("gh-secret"))
    }
}
