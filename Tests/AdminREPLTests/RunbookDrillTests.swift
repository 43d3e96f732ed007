import Foundation
import Testing

/// The runbooks in `runbooks/` are executable: every fenced block is annotated, every `sh` block
/// runs against a fresh store (sandbox tenant, fixtures, the standalone Turnkey sandbox where a
/// runbook starts one), and each command's exit code and shown output must be what it prints.
@Suite(.timeLimit(.minutes(10))) struct RunbookDrillTests {
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let runbookDirectory = repoRoot.appendingPathComponent("runbooks")
    static let required = [
        "support-session.md", "user-assisted-reset.md", "orphan-cleanup.md", "turnkey-outage.md", "audit-review.md",
        "onboarding-a-tenant.md", "refreshing-a-snapshot.md", "running-the-server.md",
    ]

    static func load(_ name: String) throws -> DrillRunbook {
        let text = try String(contentsOf: runbookDirectory.appendingPathComponent(name), encoding: .utf8)
        return DrillRunbook(name: name, text: text)
    }

    static var allRunbooks: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: runbookDirectory.path)) ?? []
        return names.filter { $0.hasSuffix(".md") }.sorted()
    }

    @Test func everyRequiredRunbookExistsAndTheIndexLinksIt() async throws {
        let index = try String(contentsOf: Self.runbookDirectory.appendingPathComponent("README.md"), encoding: .utf8)
        for name in Self.required {
            #expect(Self.allRunbooks.contains(name), "missing runbooks/\(name)")
            #expect(index.contains("(\(name))"), "runbooks/README.md does not link \(name)")
        }
    }

    @Test(arguments: allRunbooks) func everyBlockIsAnnotated(_ name: String) async throws {
        let runbook = try Self.load(name)
        #expect(runbook.lintProblems.isEmpty, "\(runbook.lintProblems.joined(separator: "\n"))")
    }

    @Test(arguments: required) func everyBackupctlCommandRunsAsWritten(_ name: String) async throws {
        let runbook = try Self.load(name)
        try #require(runbook.lintProblems.isEmpty, "\(runbook.lintProblems.joined(separator: "\n"))")
        let executable = runbook.blocks.filter { $0.annotation?.isSkip == false && $0.annotation?.file == nil }
        #expect(executable.contains { $0.mentionsBackupctl }, "\(name) runs no backupctl command")
        let session = try await DrillSession(repoRoot: Self.repoRoot)
        defer { session.finish() }
        for block in runbook.blocks {
            try await session.run(block, in: name)
        }
        try session.end(name)
        if !session.skipped.isEmpty { print("drill \(name): skipped \(session.skipped.joined(separator: ", "))") }
    }

    /// The runbooks run one after another in one shell and one store, as an operator on call
    /// would: each starts from the repository root, works in a scratch directory of its own,
    /// and stops every process it started before the next begins.
    @Test func allRunbooksRunInSequenceInOneShell() async throws {
        let session = try await DrillSession(repoRoot: Self.repoRoot)
        defer { session.finish() }
        for name in Self.required {
            let runbook = try Self.load(name)
            session.begin(name)
            for block in runbook.blocks { try await session.run(block, in: name) }
            try session.end(name)
        }
    }

    /// The lint catches what would let a runbook drift: a bare block, a skip without a reason.
    @Test func theLintRejectsUnannotatedBlocksAndSkipsWithoutReason() {
        let text = """
            ```sh
            $ backupctl whoami
            ```

            <!-- drill: skip -->
            ```sh
            $ backupctl reset walkthrough
            ```

            <!-- drill: skip reason="interactive" -->
            ```sh
            $ backupctl reset walkthrough
            ```

            <!-- drill: exit=1 expect="x" -->
            ```sh
            $ backupctl whoami
            ```
            """
        let problems = DrillRunbook(name: "t.md", text: text).lintProblems
        #expect(problems.count == 3, "\(problems)")
        #expect(problems.contains { $0.contains("without a <!-- drill") })
        #expect(problems.contains { $0.contains("needs reason") })
        #expect(problems.contains { $0.contains("unknown drill key expect") })
    }

    @Test func outputLinesMatchWholeLinesWithEllipsisWildcards() {
        let result = CLI.Result(
            stdout: "backup:     backup_account_030b2e\nscope:      MAIN\n", stderr: "import: 1 done\n",
            termination: .exited(0))
        #expect(
            DrillSession.mismatch(result, expected: ["backup:     backup_account_03…", "…", "scope:      MAIN"]) == nil)
        #expect(DrillSession.mismatch(result, expected: ["import: … done"]) == nil)
        #expect(DrillSession.mismatch(result, expected: ["scope: SYNC"]) == "scope: SYNC")
        #expect(DrillSession.mismatch(result, expected: ["scope:      MAIN", "backup: …"]) != nil, "order matters")
    }
}
