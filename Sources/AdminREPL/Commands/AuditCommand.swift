import Access
import ArgumentParser
import BackupModel
import ConsoleStore

struct AuditCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit", abstract: "Read and verify the hash-chained audit log (admin).",
        subcommands: [List.self, Verify.self])

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
            let log = AuditLog(store: try ctx.existingStore())
            let session = try ctx.session()
            let entries = try log.list(
                session: session, operatorName: `operator`, action: action, sinceMillis: sinceMillis, limit: limit)
            if follow {
                try await Self.follow(
                    ctx, first: entries,
                    next: { after throws(ConsoleError) in
                        try log.list(
                            session: try ctx.session(), operatorName: `operator`, action: action,
                            sinceMillis: sinceMillis, afterSeq: after, limit: 1000)
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
                    [String($0.seq), String($0.at), $0.operatorName, $0.action, $0.target ?? "", Self.details($0)]
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
                    "--since must be a duration ago (24h, 7d) or a date (2026-11-01), got \(text.prefix(40)).")
            }
        }

        /// Prints the entries so far, then new ones once a second, one line each, until Ctrl-C
        /// (in the REPL) or the process is stopped.
        @MainActor
        static func follow(
            _ ctx: CommandContext, first: [AuditEntry],
            next: (Int64) throws(ConsoleError) -> [AuditEntry]
        ) async throws {
            let json = ctx.settings.format == .json
            func emit(_ entry: AuditEntry) {
                Terminal.writeOut(
                    json
                        ? JSONLine.encode(entry)
                        : [
                            String(entry.seq), Readable.time(entry.at / 1000), entry.operatorName, entry.action,
                            entry.target ?? "-", details(entry),
                        ].joined(separator: "  "))
            }
            var last: Int64 = first.last?.seq ?? 0
            first.forEach(emit)
            while !SignalFlag.isRaised {
                for entry in try next(last) {
                    emit(entry)
                    last = entry.seq
                }
                try await Task.sleep(nanoseconds: 1_000_000_000)
            }
            SignalFlag.drain()
        }
    }

    struct Verify: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Walk the whole chain; report the first altered, removed or reordered entry.")

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let result = try AuditLog(store: try ctx.existingStore()).verify(session: try ctx.session())
            var output = CommandOutput(json: result) { style in
                let whose = result.scope == "all" ? "" : " of tenant \(result.scope)"
                return result.ok
                    ? "\(style.green("ok")): \(result.entries) entries\(whose) chain correctly; head hash \(result.headHash)"
                    : "\(style.red("broken")): first bad entry \(result.firstBadSeq.map(String.init) ?? "outside this tenant") after \(result.entries) entries\(whose)"
            }
            if !result.ok {
                let at = result.firstBadSeq.map { "at entry \($0)" } ?? "outside tenant \(result.scope)"
                output.failure = ConsoleError(
                    .verificationFailed, code: "audit_chain_broken",
                    "Audit chain broken \(at): \(result.problem ?? "hash mismatch").")
            }
            return output
        }
    }
}
