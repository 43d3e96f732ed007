import Access
import ArgumentParser
import BackupModel
import Cleanup
import ConsoleStore
import Foundation
import Turnkey
import TurnkeySandbox

/// `cleanup …`: find and delete orphaned Turnkey sub-organizations (DESIGN §2, issue 5).
struct CleanupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cleanup", abstract: "Find and delete Turnkey sub-orgs no backup references.",
        subcommands: [Scan.self, Run.self, Status.self, IngestLog.self, TeardownRequest.self, Submit.self])

    struct Scan: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "List sub-orgs under the parent org that no backup references (viewer).")

        @Option(help: "Grace period, e.g. 0, 90s, 30m, 24h, 2d (default: the tenant's, 24h).") var grace: String?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let session = try ctx.session()
            let report = try await Progress.waiting("cleanup scan") {
                try await CleanupWiring.service(ctx, session).scan(
                    session: session, graceSeconds: try grace.map(CleanupWiring.parseDuration))
            }
            return CommandOutput(json: report) { style in
                let head =
                    "listed \(report.listed), referenced \(report.referenced), orphans \(report.orphans.count) (\(report.orphans.filter(\.eligible).count) eligible)"
                return head + "\n"
                    + TextTable(
                        ["SUB-ORG", "REASON", "FIRST SEEN", "ELIGIBLE"],
                        report.orphans.map {
                            [$0.subOrgId, $0.reason, Timestamp.format($0.firstSeenAt), $0.eligible ? "yes" : "no"]
                        }
                    ).render(style)
            }
        }
    }

    struct Run: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete eligible orphans (dry run unless --execute; cleaner).")

        @Flag(help: "Delete for real (otherwise only report what would be deleted).") var execute = false
        @Option(help: "Refuse a run that would delete more than this.") var max: Int = 100
        @Option(help: "Deletions in flight at once.") var concurrency: Int = 4
        @Option(help: "Grace period, e.g. 0, 30m, 24h (default: the tenant's).") var grace: String?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let session = try ctx.session()
            guard max >= 0, (1...64).contains(concurrency) else {
                throw ConsoleError.usage("--max must be ≥ 0 and --concurrency between 1 and 64.")
            }
            if execute {
                try ctx.confirmDestructive(
                    "Deleting orphaned Turnkey sub-orgs of \(session.tenantName)", tenant: session.tenantName)
            }
            let service = try CleanupWiring.service(ctx, session)
            let progress = Progress(label: execute ? "cleanup run" : "cleanup run (dry run)")
            defer { progress.finish() }
            SignalFlag.drain()
            SignalFlag.install()
            defer { SignalFlag.drain() }
            let options = CleanupRunOptions(
                execute: execute, max: max, concurrency: concurrency,
                graceSeconds: try grace.map(CleanupWiring.parseDuration))
            let onProgress: (@Sendable (RunReport, Int) -> Void)? =
                execute
                ? { @Sendable report, total in
                    progress.set(
                        done: report.items.count, total: total,
                        detail:
                            "\(report.deleted) deleted, \(report.alreadyGone) gone, \(report.failed) failed, \(report.needsUser) need user"
                    )
                } : nil
            let report = try await service.run(
                session: session, options: options, progress: onProgress, shouldStop: { SignalFlag.isRaised })
            return CommandOutput(json: report) { style in
                let head =
                    report.dryRun
                    ? "dry run: \(report.items.count) sub-orgs would be deleted (pass --execute)"
                    : "deleted \(report.deleted), already gone \(report.alreadyGone), failed \(report.failed), needs user \(report.needsUser), skipped \(report.skipped)"
                        + (report.stoppedReason.map { " — \($0)" } ?? "")
                return head + "\n"
                    + TextTable(
                        ["SUB-ORG", "OUTCOME", "ATTEMPTS", "ERROR"],
                        report.items.map {
                            [$0.subOrgId, style.status($0.outcome), String($0.attempts), $0.error ?? ""]
                        }
                    ).render(style)
            }
        }
    }

    struct Status: ConsoleCommand {
        static let configuration = CommandConfiguration(abstract: "Summarise the cleanup journal (viewer).")

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let session = try ctx.session()
            let report = try CleanupWiring.service(ctx, session).status(session: session)
            return CommandOutput(json: report) { style in
                TextTable(
                    [
                        "PENDING", "DELETED", "ALREADY GONE", "FAILED", "NEEDS USER", "SKIPPED", "STAMPED",
                        "OLDEST PENDING",
                    ],
                    [
                        [
                            String(report.pending), String(report.deleted), String(report.alreadyGone),
                            String(report.failed),
                            String(report.needsUser), String(report.skipped), String(report.stamped),
                            report.oldestPendingFirstSeenAt.map(Timestamp.format) ?? "-",
                        ]
                    ]
                ).render(style)
            }
        }
    }

    struct IngestLog: ConsoleCommand {
        static let configuration = CommandConfiguration(
            commandName: "ingest-log",
            abstract: "Queue sub-orgs from backup-service logs (remove_factor.turnkey_suborg_orphaned; cleaner).")

        @Argument(help: "Log file; `-` reads stdin.") var file: String

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let session = try ctx.session()
            let data =
                file == "-"
                ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: file)
            guard let data else { throw ConsoleError.invalid("invalid_file", "Cannot read the log file \(file).") }
            let report = try CleanupWiring.service(ctx, session).ingestLog(
                session: session, text: String(decoding: data, as: UTF8.self))
            return .message(
                "read \(report.lines) lines: \(report.found) sub-org ids, \(report.new) new in the journal",
                json: report)
        }
    }

    struct TeardownRequest: ConsoleCommand {
        static let configuration = CommandConfiguration(
            commandName: "teardown-request",
            abstract: "Print the deletion body for the user to stamp with `recovery stamp` (cleaner).")

        @Argument(help: "The sub-organization id.") var subOrgId: String
        @Option(help: "Write the body's exact bytes to this file (no trailing newline), ready to stamp.")
        var out: String?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let session = try ctx.session()
            let body = try CleanupWiring.service(ctx, session).teardownRequest(session: session, subOrgId: subOrgId)
            guard let out else {
                return CommandOutput(json: ["subOrgId": subOrgId.lowercased(), "body": body]) { _ in body }
            }
            // The stamp covers the exact bytes, so the file gets the body and nothing else.
            guard FileManager.default.createFile(atPath: out, contents: Data(body.utf8)) else {
                throw ConsoleError.invalid("invalid_file", "Cannot write the body file \(out).")
            }
            return CommandOutput(json: ["subOrgId": subOrgId.lowercased(), "body": body, "file": out]) { _ in
                "Wrote the delete body for \(subOrgId.lowercased()) to \(out); the user stamps it with `backupctl recovery stamp --body-file \(out)`."
            }
        }
    }

    struct Submit: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Journal and send a user-stamped (break-glass) deletion (cleaner).")

        @Option(help: "The body file, exactly as stamped.") var bodyFile: String
        @Option(help: "The X-Stamp value from `recovery stamp`.") var stamp: String

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let session = try ctx.session()
            guard let body = FileManager.default.contents(atPath: bodyFile) else {
                throw ConsoleError.invalid("invalid_file", "Cannot read the body file \(bodyFile).")
            }
            let item = try await Progress.waiting("cleanup submit") {
                try await CleanupWiring.service(ctx, session).submit(
                    session: session, body: Array(body), stamp: stamp.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            return .message("\(item.subOrgId): \(item.outcome)" + (item.error.map { " (\($0))" } ?? ""), json: item)
        }
    }
}
