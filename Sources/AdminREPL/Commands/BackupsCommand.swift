import Access
import ArgumentParser
import BackupModel
import ConsoleService
import Inspect

/// `backups list`: find backups by factor kind, health and age, then `show` one by a prefix.
struct BackupsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backups", abstract: "List and search the tenant's backups (viewer).", subcommands: [List.self])

    struct List: ConsoleCommand, ListsRecords {
        static let configuration = CommandConfiguration(
            abstract: "List backups, filtered by factor kind, health and age, in id order.",
            discussion: """
                Age is that of the backup's oldest factor. Examples:
                  backups list --health fail
                  backups list --factor-kind oidc --older-than 90d --limit 20
                """)

        @Option(help: "Only backups with a main factor of this kind: passkey, oidc or keypair.") var factorKind: String?
        @Option(help: "Only backups whose worst health check is ok, warn or fail.") var health: String?
        @Option(help: "Only backups older than this (e.g. 30d, 12h, 2w).") var olderThan: String?
        @Option(help: "Only backups newer than this (e.g. 7d).") var newerThan: String?
        @Option(help: "At most N backups (default 50).") var limit: Int = 50

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            var query = BackupList.Query(limit: limit)
            if let factorKind {
                guard let kind = BackupList.FactorKindFilter(rawValue: factorKind) else {
                    throw ConsoleError.invalid(
                        "invalid_factor_kind",
                        "--factor-kind must be passkey, oidc or keypair, got \(SecretShape.excerpt(factorKind, limit: 40))."
                    )
                }
                query.factorKind = kind
            }
            if let health {
                guard let status = HealthStatus(rawValue: health) else {
                    throw ConsoleError.invalid(
                        "invalid_health",
                        "--health must be ok, warn or fail, got \(SecretShape.excerpt(health, limit: 40)).")
                }
                query.health = status
            }
            query.olderThanSeconds = try olderThan.map { text throws(ConsoleError) in
                try Readable.duration(text, option: "--older-than")
            }
            query.newerThanSeconds = try newerThan.map { text throws(ConsoleError) in
                try Readable.duration(text, option: "--newer-than")
            }
            let listing = try await ctx.perform(BackupsListOperation(query))
            var output = CommandOutput(json: listing) { style in Self.table(listing, style) }
            output.records = ListRecords(
                ["backupId", "createdAt", "factors", "syncFactors", "blobBytes", "health"],
                listing.backups.map {
                    [
                        $0.backupId, $0.createdAt.map(Timestamp.format) ?? "", $0.factors.joined(separator: " "),
                        "\($0.syncFactors)", $0.blobBytes.map(String.init) ?? "", $0.health.rawValue,
                    ]
                })
            return output
        }

        static func table(_ listing: BackupList.Listing, _ style: RenderStyle) -> String {
            guard !listing.backups.isEmpty else { return style.dim("No backup matches.") }
            let kinds = ["PASSKEY": "passkey", "OIDC_ACCOUNT": "oidc", "EC_KEYPAIR": "keypair"]
            var out = TextTable(
                ["BACKUP", "CREATED", "FACTORS", "DEVICES", "BLOB", "HEALTH"],
                listing.backups.map { row in
                    [
                        style.cyan(InspectRender.abbreviated(row.backupId)),
                        row.createdAt.map { Readable.time($0) } ?? "-",
                        row.factors.map { kinds[$0] ?? $0 }.joined(separator: ","), "\(row.syncFactors)",
                        row.blobBytes.map(Readable.bytes) ?? style.red("none"), style.status(row.health.rawValue),
                    ]
                }
            ).render(style)
            if listing.truncated {
                out += "\n" + style.dim("… more backups match; raise --limit or narrow the filters.")
            }
            return out
        }
    }
}
