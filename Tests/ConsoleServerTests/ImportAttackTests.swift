import Foundation
import Testing

/// A tenant admin's `import` against a real `backupctl serve`: it reads below
/// `--import-root/TENANT` and nowhere else, and no export can crash or exhaust the server.
/// Each case asserts the refusal and that the valid operator is still served within 1 s.
@Suite(.serialized) struct ImportAttackTests {
    static var fixtureExport: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("runbooks/fixtures/export")
    }

    /// `imports/sandbox/ok` (the runbook export), `imports/beta/theirs` (another tenant's),
    /// `imports/sandbox/escape` (a link to `/`), `imports/sandbox/sparse` (a 100 GB sparse index).
    static func prepare(_ directory: URL) throws {
        let fm = FileManager.default
        let imports = directory.appendingPathComponent("imports")
        for tenant in ["sandbox", "beta"] {
            try fm.createDirectory(at: imports.appendingPathComponent(tenant), withIntermediateDirectories: true)
        }
        try fm.copyItem(at: fixtureExport, to: imports.appendingPathComponent("sandbox/ok"))
        try fm.copyItem(at: fixtureExport, to: imports.appendingPathComponent("beta/theirs"))
        try fm.createSymbolicLink(
            atPath: imports.appendingPathComponent("sandbox/escape").path, withDestinationPath: "/")
        let sparse = imports.appendingPathComponent("sandbox/sparse")
        try fm.createDirectory(at: sparse, withIntermediateDirectories: true)
        let index = sparse.appendingPathComponent("factor_lookup.jsonl").path
        #expect(fm.createFile(atPath: index, contents: nil))
        #expect(truncate(index, 100 << 30) == 0)
    }

    static func root(_ server: AttackServer) -> String { server.directory.appendingPathComponent("imports").path }

    @Test func importReadsOnlyBelowTheTenantsDirectory() async throws {
        try await AttackServer.with(["--import-root", "{dir}/imports"], prepare: Self.prepare) { server in
            let root = Self.root(server)
            // Refused, each with its code, and none of them lists anything of the server's disk.
            let refused: [(String, String)] = [
                ("/", "invalid_import_path"), ("/etc", "invalid_import_path"),
                ("../beta/theirs", "invalid_import_path"),
                ("ok/../../beta/theirs", "invalid_import_path"), ("\(root)/beta/theirs", "invalid_import_path"),
                ("escape", "invalid_import_path"), ("escape/etc", "invalid_import_path"),
                ("missing", "invalid_directory"),
            ]
            for (path, code) in refused {
                let result = try await server.client(
                    ["--format", "json", "--tenant", "sandbox", "import", path, "--dry-run"])
                #expect(result.status == 1, "\(path): \(result.stderr)")
                #expect(result.stderr.contains(#""code":"\#(code)""#), "\(path): \(result.stderr)")
                #expect(result.stdout.isEmpty && !result.stderr.contains("/bin"), "\(path): \(result.stdout)")
                #expect(await server.servesOperator(within: 1))
            }
            // Relative to the tenant's directory, or absolute inside it: read.
            for path in ["ok", "\(root)/sandbox/ok"] {
                let result = try await server.client(
                    ["--format", "json", "--tenant", "sandbox", "import", path, "--dry-run"])
                #expect(result.status == 0, "\(path): \(result.stderr)")
                #expect(result.stdout.contains(#""backupsSeen":2"#), "\(path): \(result.stdout)")
            }
            // The admin of beta reads beta's own; bob (a viewer) learns nothing of any path.
            let beta = try await server.client([
                "--format", "json", "--tenant", "beta", "import", "theirs", "--dry-run",
            ])
            #expect(beta.status == 0, "\(beta.stderr)")
            let viewer = try await server.client(
                ["--format", "json", "--tenant", "sandbox", "import", "/", "--dry-run"], token: server.bobToken)
            #expect(viewer.status == 77 && viewer.stderr.contains("permission_denied"), "\(viewer.stderr)")
            #expect(await server.servesOperator(within: 1))
        }
    }

    @Test func withoutAnImportRootTheServerTakesNoImports() async throws {
        try await AttackServer.with(prepare: Self.prepare) { server in
            let refused = try await server.client(
                ["--format", "json", "--tenant", "sandbox", "import", "\(Self.root(server))/sandbox/ok"])
            #expect(refused.status == 77 && refused.stderr.contains("imports_disabled"), "\(refused.stderr)")
            #expect(await server.servesOperator(within: 1))
        }
    }

    @Test func aSparseHundredGigabyteIndexIsRefusedUnread() async throws {
        try await AttackServer.with(["--import-root", "{dir}/imports"], prepare: Self.prepare) { server in
            let result = try await server.client(["--format", "json", "--tenant", "sandbox", "import", "sparse"])
            #expect(result.status == 1, "\(result.stderr)")
            #expect(result.stdout.contains("index_too_large"), "\(result.stdout)")
            #expect(server.process.isRunning)
            #expect(await server.servesOperator(within: 1))
        }
    }
}
