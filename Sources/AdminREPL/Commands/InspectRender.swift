import BackupModel
import Inspect

/// Table-mode rendering of the Inspect reports, readable on an 80-column terminal: long
/// explanations are wrapped under their row instead of cut.
enum InspectRender {
    static func show(_ r: BackupReport, _ style: RenderStyle) -> String {
        var out = keyValueBlock(
            [
                ("backup", style.cyan(r.backupId)), ("manifest", r.manifestHash),
                (
                    "sealed blob",
                    r.sealedBlob.bytes.map { "\(sizeText($0)), sha256 \(r.sealedBlob.sha256 ?? "-")" }
                        ?? style.red("none")
                ),
                ("sub-orgs", r.turnkeySubOrgIds.isEmpty ? "-" : r.turnkeySubOrgIds.joined(separator: ", ")),
                ("health", style.status(r.overall.rawValue)),
                ("data as of", r.snapshot?.summary ?? "-"),
            ], style)
        out += "\n\n" + style.bold("Factors") + "\n" + factorTable(r.factors, style)
        out += "\n\n" + style.bold("Devices (sync factors)") + "\n" + factorTable(r.syncFactors, style)
        out += "\n\n" + style.bold("Keys") + "\n"
        out += TextTable(
            ["KIND", "SUB-ORG", "USER", "PRIVATE KEY"],
            r.keys.map {
                [$0.kind, $0.turnkeyAccountId ?? "-", $0.turnkeyUserId ?? "-", $0.turnkeyPrivateKeyId ?? "-"]
            }
        ).render(style)
        if !r.unauthorizedLookupKeys.isEmpty {
            out += "\n\n" + style.bold("Index rows without a factor (unauthorized_factor)") + "\n"
            out += r.unauthorizedLookupKeys.map(SafeText.cell).joined(separator: "\n")
        }
        out += "\n\n" + style.bold("Health") + "\n"
        out += r.health.map { line($0.status, $0.check, $0.detail, style) }.joined(separator: "\n")
        return out
    }

    static func factorTable(_ factors: [BackupReport.FactorView], _ style: RenderStyle) -> String {
        guard !factors.isEmpty else { return style.dim("(none)") }
        return TextTable(
            ["ID", "KIND", "CREATED", "DETAIL", "INDEXED"],
            factors.map { f in
                let detail =
                    switch f.kind {
                    case "PASSKEY": [f.label, f.credentialId].compactMap { $0 }.joined(separator: " ")
                    case "OIDC_ACCOUNT": [f.provider, f.maskedEmail].compactMap { $0 }.joined(separator: " ")
                    default: f.publicKeyFingerprint ?? "-"
                    }
                return [
                    String(f.id.prefix(8)), f.kind, String(f.created.prefix(10)), detail,
                    f.indexed ? "yes" : style.red("no"),
                ]
            }
        ).render(style)
    }

    static func check(_ r: CheckReport, _ style: RenderStyle) -> String {
        var out = keyValueBlock(
            [
                ("tenant", r.tenant), ("backups", "\(r.backups)"),
                ("failing", r.backupsFailing > 0 ? style.red("\(r.backupsFailing)") : "0"),
                ("warning", r.backupsWarning > 0 ? style.yellow("\(r.backupsWarning)") : "0"),
            ], style)
        out +=
            "\n\n"
            + TextTable(
                ["CHECK", "OK", "WARN", "FAIL"],
                r.summary.map { [$0.check, "\($0.ok)", "\($0.warn)", $0.fail > 0 ? style.red("\($0.fail)") : "0"] }
            ).render(style)
        if !r.findings.isEmpty {
            out += "\n\n" + style.bold("Findings") + "\n"
            out += r.findings.map {
                line($0.status, "\(abbreviated($0.backupId)) \($0.check)", $0.detail, style)
            }.joined(separator: "\n")
        }
        if r.findingsOmitted > 0 {
            out +=
                "\n"
                + style.dim("… \(r.findingsOmitted) more findings not listed; `show BACKUP_ID` details one backup.")
        }
        return out
    }

    static func stats(_ s: TenantStats, _ style: RenderStyle) -> String {
        func table(_ title: String, _ buckets: [TenantStats.Bucket]) -> String {
            TextTable([title, "BACKUPS"], buckets.map { [$0.label, "\($0.backups)"] }).render(style)
        }
        var out = keyValueBlock(
            [
                ("tenant", s.tenant), ("backups", "\(s.backups)"), ("blobs", sizeText(s.blobBytesTotal)),
                ("sub-orgs referenced", "\(s.subOrgsReferenced)"), ("backups with a sub-org", "\(s.backupsWithSubOrg)"),
                ("data as of", s.snapshot?.summary ?? "-"),
            ], style)
        out += "\n\n" + table("FACTOR MIX", s.factorMix)
        out += "\n\n" + table("DEVICES", s.devices)
        out += "\n\n" + table("BLOB SIZE", s.blobSizes)
        return out
    }

    /// `status  title` then the detail wrapped, indented, to the terminal width.
    static func line(_ status: HealthStatus, _ title: String, _ detail: String, _ style: RenderStyle) -> String {
        // Details quote metadata: escaped before wrapping, so none can start a line of its own.
        let head =
            style.status(status.rawValue) + String(repeating: " ", count: 6 - status.rawValue.count)
            + SafeText.cell(title)
        return ([head] + wrap(SafeText.cell(detail), width: (style.width ?? 100) - 6).map { "      " + $0 })
            .joined(separator: "\n")
    }

    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var current = ""
        for word in text.split(separator: " ") {
            if !current.isEmpty, current.count + 1 + word.count > max(width, 20) {
                lines.append(current)
                current = ""
            }
            current += (current.isEmpty ? "" : " ") + word
        }
        if !current.isEmpty { lines.append(current) }
        return lines
    }

    /// `1.2 MiB (1234567 bytes)`: readable, and exact for whoever compares sizes.
    static func sizeText(_ bytes: Int) -> String {
        bytes < 1024 ? "\(bytes) bytes" : "\(Readable.bytes(bytes)) (\(bytes) bytes)"
    }

    static func abbreviated(_ id: String) -> String {
        (try? BackupAccountID(id))?.abbreviated ?? id
    }
}
