import Access
import ArgumentParser
import BackupModel
import ConsoleService
import ConsoleStore
import Foundation

struct AuditCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit", abstract: "Read and verify the hash-chained audit log (admin).",
        subcommands: [List.self, Verify.self, Export.self, Keygen.self])

    struct List: ConsoleCommand, ListsRecords {
        static let configuration = CommandConfiguration(
            abstract: "The latest audit entries of the current tenant, filtered; --follow waits for new ones.",
            discussion: """
                Examples:
                  audit list --operator bob --since 24h
                  audit list --action reset. --since 2026-11-01
                  audit list --follow            (Ctrl-C stops; JSON mode prints one entry a line)
                """)

        @Option(help: "How many entries.") var limit: Int = 50
        @Option(help: "Only this operator's entries.") var `operator`: String?
        @Option(help: "Only this action (backup.show), or a family ending in '.' (reset.).") var action: String?
        @Option(help: "Only entries since a time: a duration ago (24h, 7d) or a date (2026-11-01, RFC 3339).")
        var since: String?
        @Flag(help: "Keep printing new entries as they are written, until Ctrl-C.") var follow = false

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let sinceMillis = try since.map { text throws(ConsoleError) in try Self.sinceMillis(text, now: ctx.clock) }
            // A follower starts after the tenant's newest entry, read first: with filters that
            // match nothing yet, the polls still page forward from there (and never from the
            // start of a long log, nor "the latest" that skips what came in between).
            let head =
                follow
                ? try await ctx.perform(AuditListOperation(operatorName: nil, action: nil, sinceMillis: nil, limit: 1))
                    .entries.last?.seq : nil
            let entries = try await ctx.perform(
                AuditListOperation(operatorName: `operator`, action: action, sinceMillis: sinceMillis, limit: limit)
            ).entries
            if follow {
                try await Self.follow(
                    ctx, first: entries, after: head,
                    next: { after throws(ConsoleError) in
                        try await ctx.perform(
                            AuditListOperation(
                                operatorName: `operator`, action: action, sinceMillis: sinceMillis, afterSeq: after,
                                limit: 1000)
                        ).entries
                    })
                return .empty
            }
            var output = CommandOutput(json: ["entries": entries]) { style in
                TextTable(
                    ["SEQ", "TIME", "OPERATOR", "ACTION", "TARGET", "DETAILS"],
                    entries.map { entry in
                        [
                            String(entry.seq), Readable.time(entry.at / 1000), entry.operatorName, entry.action,
                            entry.target ?? "-", Self.details(entry),
                        ]
                    }
                ).render(style)
            }
            output.records = ListRecords(
                ["seq", "at", "operator", "action", "target", "details"],
                entries.map {
                    [
                        String($0.seq), UTCMillis.format($0.at), $0.operatorName, $0.action, $0.target ?? "",
                        Self.details($0),
                    ]
                })
            return output
        }

        static func details(_ entry: AuditEntry) -> String {
            entry.details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }

        /// `24h`, `7d` (that long ago), `2026-11-01` or an RFC 3339 time → unix milliseconds.
        static func sinceMillis(_ text: String, now: WallClock) throws(ConsoleError) -> Int64 {
            if let stamp = Timestamp(rfc3339: text) { return stamp.seconds * 1000 }
            if text.count == 10, let day = Timestamp(rfc3339: text + "T00:00:00Z") { return day.seconds * 1000 }
            do {
                return now.millis() - 1000 * (try Readable.duration(text, option: "--since"))
            } catch {
                throw .invalid(
                    "invalid_since",
                    "--since must be a duration ago (24h, 7d) or a date (2026-11-01), got \(SecretShape.excerpt(text, limit: 40))."
                )
            }
        }

        /// Prints the entries so far, then new ones once a second, one line each, until Ctrl-C
        /// (in the REPL) or the process is stopped.
        @MainActor
        static func follow(
            _ ctx: CommandContext, first: [AuditEntry], after head: Int64?,
            next: (Int64) async throws(ConsoleError) -> [AuditEntry]
        ) async throws {
            let json = ctx.settings.format == .json
            func emit(_ entry: AuditEntry) {
                Terminal.writeOut(
                    json
                        ? JSONLine.encode(entry)
                        : [
                            String(entry.seq), Readable.time(entry.at / 1000), entry.operatorName, entry.action,
                            entry.target ?? "-", details(entry),
                        ].map(SafeText.cell).joined(separator: "  "))
            }
            // At least 1: 0 asks for the latest entries, not the next ones (a tenant with none
            // yet has none at seq 1 either).
            var last: Int64 = max(first.last?.seq ?? 0, head ?? 0, 1)
            first.forEach(emit)
            while !SignalFlag.isRaised {
                let page = try await next(last)
                for entry in page {
                    emit(entry)
                    last = entry.seq
                }
                // A full page (`next` asks for 1000): more are waiting, so a follower that fell
                // behind catches up at once.
                if page.count >= 1000 { continue }
                try await Task.sleep(nanoseconds: 1_000_000_000)
            }
            SignalFlag.drain()
        }
    }

    struct Verify: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Walk the whole chain; report the first altered, removed or reordered entry.",
            discussion: """
                With --public-key (or on a server that signs with --audit-key), the signed checkpoints \
                are checked too: a truncated tail, a rewritten entry with the chain recomputed, and a \
                removed or forged checkpoint are found even when the chain itself is consistent; so is a \
                chain with no checkpoint, or more unsigned entries than --max-unsigned. With --anchor \
                FILE, the store must still hold every checkpoint anchored outside it, with the same head \
                at the same entry.
                """)

        @Option(
            help: ArgumentHelp(
                "The audit signing key's public key (what audit keygen printed), to check the checkpoints; "
                    + "repeat it with the retired keys after a rotation.",
                valueName: "file"))
        var publicKey: [String] = []
        @Option(
            help: ArgumentHelp(
                "Checkpoints anchored outside the store: a witness file (serve --audit-witness), the signer's "
                    + "<key>.hwm, or an earlier audit export. Repeatable.",
                valueName: "file"))
        var anchor: [String] = []
        @Option(
            help: ArgumentHelp(
                "With keys: more unsigned entries than this after the newest checkpoint is a finding "
                    + "(default: the server's --checkpoint-entries, else 100).",
                valueName: "n"))
        var maxUnsigned: Int64?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            var keys: [String] = []
            for path in publicKey { keys.append(try Self.readPublicKey(path)) }
            var anchored: [AuditCheckpoint] = []
            for path in anchor { anchored += try AuditAnchor.checkpoints(inFile: path) }
            // The newest distinct anchors: they cover the older ones through the checkpoint chain.
            var seen = Set<String>()
            anchored = anchored.sorted { $0.seq > $1.seq }.filter { seen.insert($0.hash).inserted }
            anchored = Array(anchored.prefix(AuditVerifyOperation.maxAnchors).reversed())
            if !anchor.isEmpty && anchored.isEmpty {
                throw ConsoleError.invalid("invalid_anchor", "The anchor file(s) hold no checkpoint line.")
            }
            let result = try await ctx.perform(
                AuditVerifyOperation(
                    publicKeys: keys, anchors: anchor.isEmpty ? nil : anchored, maxUnsigned: maxUnsigned))
            var output = CommandOutput(json: result) { style in
                let whose = result.scope == "all" ? "" : " of tenant \(result.scope)"
                let first: String
                if result.ok || Self.isCheckpointFinding(result.finding) {
                    // A checkpoint finding comes with a chain that is consistent on its own.
                    let word = result.ok ? style.green("ok") : style.yellow("consistent")
                    first = "\(word): \(result.entries) entries\(whose) chain correctly; head hash \(result.headHash)"
                } else {
                    first =
                        "\(style.red("broken")): first bad entry \(result.firstBadSeq.map(String.init) ?? "outside this tenant") after \(result.entries) entries\(whose)"
                }
                return ([first] + Self.checkpointLines(result, style)).joined(separator: "\n")
            }
            if !result.ok {
                if Self.isCheckpointFinding(result.finding), let finding = result.finding {
                    output.failure = ConsoleError(
                        .verificationFailed, code: "audit_\(finding)",
                        "Audit log tampered (\(finding.replacingOccurrences(of: "_", with: " "))): \(result.problem ?? "a checkpoint does not match")."
                    )
                } else {
                    let at = result.firstBadSeq.map { "at entry \($0)" } ?? "outside tenant \(result.scope)"
                    output.failure = ConsoleError(
                        .verificationFailed, code: "audit_chain_broken",
                        "Audit chain broken \(at): \(result.problem ?? "hash mismatch").")
                }
            }
            return output
        }

        static func isCheckpointFinding(_ finding: String?) -> Bool {
            [
                "truncated_tail", "recomputed_chain", "checkpoint_missing", "bad_signature", "unsigned_chain",
                "unsigned_tail", "bad_anchor",
            ].contains(finding ?? "")
        }

        /// What the checkpoints showed, under the chain's line; nothing when there are none and no key.
        static func checkpointLines(_ result: AuditVerification, _ style: RenderStyle) -> [String] {
            guard let stored = result.checkpoints else { return [] }
            let anchors = result.anchorsChecked.map { ["\($0) anchored checkpoints checked against the store"] } ?? []
            guard let fingerprint = result.keyFingerprint else {
                let line = ["\(stored) signed checkpoints not checked: pass --public-key FILE"]
                if !result.ok, isCheckpointFinding(result.finding) {
                    return line + anchors + ["\(style.red("broken")): \(result.problem ?? "an anchor does not match")"]
                }
                return line + anchors
            }
            var line =
                "\(result.checkpointsVerified ?? 0) of \(stored) signed checkpoints verified with key \(fingerprint)"
            if let last = result.lastCheckpointSeq, let uncovered = result.uncoveredEntries {
                if last == 0 {
                    line += "; nothing is signed yet"
                } else {
                    line += "; the newest covers entry \(last)"
                    if uncovered > 0 { line += ", \(uncovered) entries after it not yet signed" }
                }
            }
            if !result.ok, isCheckpointFinding(result.finding) {
                return [line] + anchors + ["\(style.red("broken")): \(result.problem ?? "a checkpoint does not match")"]
            }
            return [line] + anchors
        }

        /// The public key file's text (it is not secret; the server checks it is a P-256 point).
        static func readPublicKey(_ path: String) throws(ConsoleError) -> String {
            let bytes = try InputFile.read(
                path, what: "The public key file", maxBytes: 4096, code: "invalid_public_key")
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    struct Export: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write entries since a time as JSON lines for a SIEM, with the newest signed checkpoint.",
            discussion: """
                One line per entry: {"type":"entry","seq","time","operator","tenant","action","target",\
                "details","hash","prevHash"}, oldest first; an operator who may create tenants exports the \
                whole chain and gets the newest checkpoint as a last line {"type":"checkpoint",…}. \
                A tenant admin exports their tenant's entries.
                """)

        @Option(
            help: ArgumentHelp(
                "Entries since a time: a duration ago (24h, 7d) or a date (2026-11-01, RFC 3339).", valueName: "time"))
        var since: String
        @Option(
            help: ArgumentHelp("Write the lines to this file (mode 600) instead of standard output.", valueName: "file")
        )
        var out: String?
        @Flag(
            help: "Keep writing new entries and each new signed checkpoint as they are made, until Ctrl-C (for a SIEM)."
        )
        var follow = false

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let sinceMillis = try List.sinceMillis(since, now: ctx.clock)
            if follow {
                guard out == nil else { throw ConsoleError.usage("--follow writes to standard output; drop --out.") }
                try await Self.follow(ctx, sinceMillis: sinceMillis)
                return .empty
            }
            let file = try out.map { path throws(ConsoleError) in try OutputFile(opening: path) }
            var written = 0
            var checkpoint: AuditCheckpoint?
            var lines: [UInt8] = []
            do {
                var afterSeq: Int64 = 0
                while true {
                    let page = try await ctx.perform(AuditExportOperation(sinceMillis: sinceMillis, afterSeq: afterSeq))
                    var batch = page.entries.map(AuditExportLine.entry)
                    if let newest = page.checkpoint {
                        batch.append(.checkpoint(newest))
                        checkpoint = newest
                    }
                    for line in batch {
                        if file != nil {
                            lines += Array(JSONLine.encode(line).utf8) + [0x0a]
                        } else {
                            Terminal.writeOut(JSONLine.encode(line))
                        }
                    }
                    written += page.entries.count
                    guard page.more, let last = page.entries.last, last.seq > afterSeq else { break }
                    afterSeq = last.seq
                }
                try file?.replaceContents(with: lines)
            } catch {
                file?.abandon()
                throw error
            }
            guard let out else { return .empty }
            let summary = ExportSummary(entries: written, checkpointSeq: checkpoint?.seq, out: out)
            return CommandOutput(json: summary) { _ in
                "exported \(written) entries to \(out)"
                    + (checkpoint.map { " with the newest checkpoint (entry \($0.seq))" } ?? " (no checkpoint)")
            }
        }

        /// Writes every page, then asks again once a second after the last entry it wrote,
        /// writing new entries and any checkpoint newer than the last one written, until Ctrl-C
        /// or the process is stopped. Each line is flushed as it is written.
        @MainActor
        static func follow(_ ctx: CommandContext, sinceMillis: Int64) async throws {
            var afterSeq: Int64 = 0
            // By hash, not seq: a forged checkpoint with a huge seq must not silence the ones after it.
            var lastCheckpoint: String?
            defer { SignalFlag.drain() }
            while !SignalFlag.isRaised {
                let page = try await ctx.perform(AuditExportOperation(sinceMillis: sinceMillis, afterSeq: afterSeq))
                for entry in page.entries { Terminal.writeOut(JSONLine.encode(AuditExportLine.entry(entry))) }
                afterSeq = page.entries.last?.seq ?? afterSeq
                if let checkpoint = page.checkpoint, checkpoint.hash != lastCheckpoint {
                    Terminal.writeOut(JSONLine.encode(AuditExportLine.checkpoint(checkpoint)))
                    lastCheckpoint = checkpoint.hash
                }
                if !page.more { try await Task.sleep(nanoseconds: 1_000_000_000) }
            }
        }

        struct ExportSummary: Encodable {
            var entries: Int
            var checkpointSeq: Int64?
            var out: String

            private enum Keys: String, CodingKey { case entries, checkpointSeq, out }

            /// `checkpointSeq` is null when there was none.
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: Keys.self)
                try c.encode(entries, forKey: .entries)
                try c.encode(checkpointSeq, forKey: .checkpointSeq)
                try c.encode(out, forKey: .out)
            }
        }
    }

    struct Keygen: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a new audit signing key (P-256) in a new file of mode 600; print its public key.",
            discussion: """
                Local: no store and no token. Keep the key file off the database's host backups and give \
                it to the server (backupctl serve --audit-key FILE); give the public key to whoever runs \
                audit verify --public-key. The private key is never printed.
                """)

        @Option(help: ArgumentHelp("The new key file (must not exist).", valueName: "file")) var out: String

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let key = try AuditKeyFile.generate(to: out, random: ctx.random)
            let result = KeygenOutput(keyFile: out, publicKey: key.publicKey, fingerprint: key.fingerprint)
            return CommandOutput(json: result) { style in
                keyValueBlock(
                    [
                        ("key file", out + " (mode 600)"), ("public key", key.publicKey),
                        ("fingerprint", key.fingerprint),
                    ],
                    style)
            }
        }

        struct KeygenOutput: Encodable {
            var keyFile: String
            var publicKey: String
            var fingerprint: String
        }
    }
}
