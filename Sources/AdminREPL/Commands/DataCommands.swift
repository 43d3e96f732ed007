import ArgumentParser
import BackupModel
import ConsoleService
import ConsoleStore

struct ImportCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import a backup-service export (DIR/<backup_id>/metadata, …/backup, factor_lookup.jsonl).")

    @Argument(help: "The export directory, on the console's machine (the server's, with --server).")
    var directory: String
    @Flag(help: "Report what would be imported; write nothing.") var dryRun = false
    @Option(help: "When the export's copy of the service started (RFC 3339); else DIR/export.json says.")
    var snapshotAt: String?
    @Flag(help: "The export holds every backup: backups it no longer holds are retired.") var complete = false
    @Option(
        help: ArgumentHelp(
            "Confirm that a complete snapshot may retire up to N backups (beyond 1% of the tenant's, at most 100).",
            valueName: "n"))
    var retireAtMost: Int?

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        let report = try await ctx.performJob(
            ImportOperation(
                directory: directory, dryRun: dryRun, snapshotAt: snapshotAt, complete: complete,
                retireAtMost: retireAtMost),
            label: "import")
        var output = CommandOutput(json: report) { style in Self.render(report, style) }
        output.failure = Self.rejection(report)
        return output
    }

    /// Exit 1 when anything was refused (a backup or an index row); the good backups are still
    /// imported and the report lists each refusal with its reason.
    static func rejection(_ r: ImportReport) -> ConsoleError? {
        let rows = r.problems.filter { $0.path.hasPrefix("factor_lookup.jsonl") }.count
        guard r.failed > 0 || !r.problems.isEmpty else { return nil }
        return .invalid(
            "import_rejected",
            "\(r.failed) of \(r.backupsSeen) backups and \(rows) index rows were rejected"
                + (r.dryRun ? " (dry run)" : "; the rest was imported") + "; the report lists each with its reason.")
    }

    static func render(_ r: ImportReport, _ style: RenderStyle) -> String {
        var out = keyValueBlock(
            [
                ("mode", r.dryRun ? style.yellow("dry run (nothing written)") : "import"),
                ("backups seen", "\(r.backupsSeen)"), ("imported", "\(r.imported)"),
                ("unchanged", "\(r.unchanged)"), ("failed", r.failed > 0 ? style.red("\(r.failed)") : "0"),
                ("lookup rows", "\(r.lookupRowsImported)"),
                (
                    "snapshot",
                    r.snapshotAt.map { "\($0)\(r.complete ? ", complete" : ", partial")" }
                        ?? style.yellow("time unknown (cleanup will not trust it)")
                ),
                (
                    "retired",
                    r.retired.isEmpty ? "0" : style.yellow("\(r.retired.count)") + (r.dryRun ? " (would be)" : "")
                ),
                ("factors moved", "\(r.factorsMoved)"),
            ], style)
        if !r.problems.isEmpty {
            out += "\n\n" + style.bold("Problems") + "\n"
            out += TextTable(["PATH", "CODE", "REASON"], r.problems.map { [$0.path, $0.code, $0.reason] }).render(style)
        }
        if !r.conflicts.isEmpty {
            out += "\n\n" + style.bold("Factors enrolled in more than one backup") + "\n"
            out += TextTable(
                ["LOOKUP KEY", "BACKUPS"], r.conflicts.map { [$0.pk, $0.backupIds.joined(separator: ", ")] }
            )
            .render(style)
        }
        if !r.retired.isEmpty {
            out += "\n\n" + style.bold("Retired: no longer in the complete snapshot") + "\n"
            out += r.retired.prefix(50).map { "  \($0)" }.joined(separator: "\n")
            if r.retired.count > 50 { out += "\n  … and \(r.retired.count - 50) more (--format json lists all)" }
        }
        if !r.drift.isEmpty {
            out += "\n\n" + style.bold("Index drift (imported as the service has it)") + "\n"
            out += TextTable(["BACKUP", "KIND", "LOOKUP KEY"], r.drift.map { [$0.backupId, $0.kind.rawValue, $0.pk] })
                .render(style)
        }
        return out
    }
}

struct SeedCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed", abstract: "Fill a sandbox tenant with realistic synthetic backups (real keys).")

    @Option(help: "How many backups.") var backups: Int
    @Option(help: "How many Turnkey sub-orgs no backup references.") var orphans: Int = 0
    @Option(help: "Seed of the deterministic generator.") var seed: UInt64 = 1

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        let report = try await ctx.performJob(
            SeedOperation(backups: backups, orphans: orphans, seed: seed), label: "seed", total: backups)
        return CommandOutput(json: report) { style in
            keyValueBlock(
                [
                    ("tenant", report.tenant), ("seed", "\(report.seed)"), ("backups", "\(report.backups)"),
                    ("already there", "\(report.existing)"), ("lookup rows", "\(report.lookupRows)"),
                    ("with drift", "\(report.driftedBackups)"),
                    ("referenced sub-orgs", "\(report.referencedSubOrgs)"),
                    ("orphan sub-orgs", "\(report.orphanSubOrgs)"), ("blob bytes", "\(report.blobBytes)"),
                ], style)
        }
    }
}
