import ArgumentParser
import BackupModel
import Cleanup
import ConsoleService
import Foundation
import Inspect

/// `cleanup …`: find and delete orphaned Turnkey sub-organizations (DESIGN §2, issue 5).
struct CleanupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cleanup", abstract: "Find and delete Turnkey sub-orgs no backup references.",
        subcommands: [Scan.self, Run.self, Status.self, IngestLog.self, TeardownRequest.self, Submit.self])

    struct Scan: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "List sub-orgs under the parent org that no backup references (viewer).")

        @Option(help: "Grace period, e.g. 0, 90s, 30m, 24h, 2d (default: the tenant's, 24h).")
        var grace: GraceDuration?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let scanned = try await Progress.waiting("cleanup scan") {
                try await ctx.perform(CleanupScanOperation(graceSeconds: grace?.seconds))
            }
            let report = scanned.report
            return CommandOutput(json: report) { style in
                var head =
                    "listed \(report.listed), referenced \(report.referenced), orphans \(report.orphans.count) (\(report.orphans.filter(\.eligible).count) eligible, \(report.waitingForSnapshot) waiting for a snapshot)"
                if let at = report.snapshotAt, let age = report.snapshotAgeSeconds {
                    head += "\nnewest complete snapshot: \(at) (\(SnapshotAge.age(age)) old)"
                } else if !scanned.sandbox {
                    head += "\nno complete snapshot with a known time: nothing unreferenced can be proven orphaned yet"
                }
                return head + "\n"
                    + TextTable(
                        ["SUB-ORG", "REASON", "FIRST SEEN", "ELIGIBLE"],
                        report.orphans.map {
                            [
                                $0.subOrgId, $0.reason, Readable.time($0.firstSeenAt),
                                $0.eligible
                                    ? "yes (\($0.provenBy ?? "grace"))" : "no, waiting for \($0.waitingFor ?? "grace")",
                            ]
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
        @Option(help: "Grace period, e.g. 0, 30m, 24h (default: the tenant's).") var grace: GraceDuration?
        @Flag(help: "With --execute: queue them for the cleanup workers (backupctl worker, serve --workers N).")
        var queue = false

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            guard !queue || execute else { throw ConsoleError.usage("--queue goes with --execute.") }
            // Plan, then apply: on a terminal the operator confirms the count the dry run found,
            // and the run may delete no more than that (--max lowered to it).
            var approvedMax = max
            if execute && !ctx.settings.yes && ctx.interactive {
                let planned = try await ctx.perform(
                    CleanupRunOperation(
                        execute: false, max: max, concurrency: concurrency, graceSeconds: grace?.seconds,
                        confirmed: false))
                let plan = planned.report
                let tenant = try TenantName(planned.tenant)
                guard !plan.items.isEmpty else {
                    return .message(
                        "Nothing to delete: no orphan of \(tenant) is eligible"
                            + (plan.waitingForSnapshot > 0
                                ? " (\(plan.waitingForSnapshot) wait for a fresh snapshot)." : "."),
                        json: plan)
                }
                let shown = plan.items.prefix(10).map { "  \($0.subOrgId)" }.joined(separator: "\n")
                Terminal.writeErr(
                    "Plan: delete \(plan.items.count) Turnkey sub-org(s) of \(tenant) (deleteWithoutExport):\n"
                        + shown + (plan.items.count > 10 ? "\n  … and \(plan.items.count - 10) more" : ""))
                try ctx.confirmDestructive(
                    "Deleting these \(plan.items.count) sub-orgs destroys the keys inside them", tenant: tenant)
                approvedMax = plan.items.count
            }
            // Without --yes a batch run is refused by the service (nothing destructive by default).
            let operation = CleanupRunOperation(
                execute: execute, max: approvedMax, concurrency: concurrency, graceSeconds: grace?.seconds,
                confirmed: !execute || ctx.settings.yes || ctx.interactive, queue: queue)
            SignalFlag.drain()
            SignalFlag.install()
            TermSignal.install()  // SIGTERM stops a run like Ctrl-C: in-flight calls finish and are recorded
            defer {
                TermSignal.restore()
                SignalFlag.drain()
            }
            let ran = try await ctx.performJob(operation, label: execute ? "cleanup run" : "cleanup run (dry run)")
            TermSignal.restore()
            let report = ran.report
            var output = CommandOutput(json: report) { style in
                let waiting =
                    report.waitingForSnapshot > 0
                    ? "\n\(report.waitingForSnapshot) orphan(s) left alone: they wait for a complete snapshot taken at least the grace period after they were first seen (see runbooks/refreshing-a-snapshot.md)."
                    : ""
                let head =
                    report.dryRun
                    ? "dry run: \(report.items.count) sub-orgs would be deleted (pass --execute)\(waiting)"
                    : queue
                        ? "queued \(report.items.count) sub-org(s) for the cleanup workers (cleanup status shows their progress)"
                            + (report.stoppedReason.map { " — \($0)" } ?? "") + waiting
                        : "deleted \(report.deleted), already gone \(report.alreadyGone), failed \(report.failed), needs user \(report.needsUser), skipped \(report.skipped)"
                            + (report.stoppedReason.map { " — \($0)" } ?? "") + waiting
                return head + "\n"
                    + TextTable(
                        ["SUB-ORG", "OUTCOME", "ATTEMPTS", "ERROR"],
                        report.items.map {
                            [$0.subOrgId, style.status($0.outcome), String($0.attempts), $0.error ?? ""]
                        }
                    ).render(style)
            }
            // A cron job must learn that eligible sub-orgs are left failed: exit 2, items listed above.
            if report.failed > 0 {
                let failed = report.items.filter { $0.outcome == "failed" }.map(\.subOrgId)
                output.failure = ConsoleError(
                    .remote, code: "cleanup_incomplete",
                    "\(report.failed) eligible sub-org(s) of \(ran.tenant) are left failed after the run's retries (\(failed.prefix(5).joined(separator: ", "))\(failed.count > 5 ? ", …" : "")); run `cleanup run --execute` again, and see `cleanup status --state failed`."
                )
            }
            return output
        }
    }

    struct Status: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Summarise the cleanup journal and list its items (viewer).",
            discussion: "Example: cleanup status --state failed --limit 20")

        @Option(help: "Only items in this state: pending, deleted, alreadyGone, failed, needsUser, skipped.")
        var state: [String] = []
        @Option(help: "Only items queued for this reason: unreferenced, reset, retired, service_log.")
        var reason: String?
        @Option(help: "List at most this many items (oldest first seen first).") var limit: Int = 50

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let report = try await ctx.perform(CleanupStatusOperation(states: state, reason: reason, limit: limit))
            return CommandOutput(json: report) { style in
                var out = TextTable(
                    [
                        "PENDING", "DELETED", "ALREADY GONE", "FAILED", "NEEDS USER", "SKIPPED", "STAMPED",
                        "OLDEST PENDING",
                    ],
                    [
                        [
                            String(report.pending), String(report.deleted), String(report.alreadyGone),
                            String(report.failed),
                            String(report.needsUser), String(report.skipped), String(report.stamped),
                            report.oldestPendingFirstSeenAt.map { Readable.time($0) } ?? "-",
                        ]
                    ]
                ).render(style)
                guard !report.items.isEmpty else { return out }
                out +=
                    "\n\n"
                    + TextTable(
                        ["SUB-ORG", "STATE", "REASON", "FIRST SEEN", "ATTEMPTS", "LAST ERROR"],
                        report.items.map {
                            [
                                $0.subOrgId, style.status($0.state), $0.reason, Readable.time($0.firstSeenAt),
                                String($0.attempts), $0.lastError ?? "",
                            ]
                        }
                    ).render(style)
                if report.matching > report.items.count {
                    out += "\n\(report.items.count) of \(report.matching) items shown; raise --limit for more."
                }
                return out
            }
        }
    }

    struct IngestLog: ConsoleCommand {
        static let configuration = CommandConfiguration(
            commandName: "ingest-log",
            abstract: "Queue sub-orgs from backup-service logs (remove_factor.turnkey_suborg_orphaned; cleaner).")

        @Argument(help: "Log file; `-` reads stdin.") var file: String

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let data =
                file == "-"
                ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: file)
            guard let data else { throw ConsoleError.invalid("invalid_file", "Cannot read the log file \(file).") }
            let report = try await ctx.perform(CleanupIngestLogOperation(text: String(decoding: data, as: UTF8.self)))
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
            // The file is opened before anything is journaled or audited: an unwritable --out
            // fails the command with nothing recorded.
            let file = try out.map { path throws(ConsoleError) in try OutputFile(opening: path) }
            let body: String
            do {
                body = try await ctx.perform(CleanupTeardownRequestOperation(subOrgId: subOrgId)).body
            } catch {
                file?.abandon()
                throw error
            }
            guard let out, let file else {
                return CommandOutput(json: ["subOrgId": subOrgId.lowercased(), "body": body]) { _ in body }
            }
            // The stamp covers the exact bytes, so the file gets the body and nothing else.
            try file.replaceContents(with: Array(body.utf8))
            return CommandOutput(json: ["subOrgId": subOrgId.lowercased(), "body": body, "file": out]) { _ in
                "Wrote the delete body for \(subOrgId.lowercased()) to \(out); the user stamps it with `backupctl recovery stamp --body-file \(out)`."
            }
        }
    }

    struct Submit: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Journal a user-stamped (break-glass) deletion and send it once the sub-org is eligible (cleaner).")

        @Option(help: "The body file, exactly as stamped.") var bodyFile: String
        @Option(help: "The X-Stamp value from `recovery stamp`.") var stamp: String
        @Option(help: "Grace period, e.g. 0, 30m, 24h (default: the tenant's).") var grace: GraceDuration?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let body = Data(try InputFile.read(bodyFile, what: "The body file", maxBytes: 1 << 20))
            // Destructive: the operator confirms on the session's tenant (without one the
            // operation itself says no tenant is selected).
            if let tenant = try await ctx.perform(WhoamiOperation()).tenant {
                try ctx.confirmDestructive(
                    "Submitting a stamped deletion lets the console delete that sub-org and the keys inside it once it is eligible",
                    tenant: try TenantName(tenant))
            }
            let item = try await Progress.waiting("cleanup submit") {
                try await ctx.perform(CleanupSubmitOperation(body: body, stamp: stamp, graceSeconds: grace?.seconds))
            }
            return .message("\(item.subOrgId): \(item.outcome)" + (item.error.map { " (\($0))" } ?? ""), json: item)
        }
    }
}

/// SIGTERM during `cleanup run`: raises the same flag as Ctrl-C, then the default comes back
/// (in the REPL; a batch or a direct command keeps its handler for the whole run, see ``Interrupts``).
enum TermSignal {
    static func install() {
        SignalFlag.install()
        SignalFlag.handle(SIGTERM)
    }

    static func restore() {
        guard !Interrupts.heldForRun else { return }
        var action = sigaction()
        action.__sigaction_handler.sa_handler = SIG_DFL
        sigemptyset(&action.sa_mask)
        sigaction(SIGTERM, &action, nil)
    }
}
