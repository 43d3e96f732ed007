import Access
import ArgumentParser
import BackupModel
import ConsoleStore

struct AuditCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit", abstract: "Read and verify the hash-chained audit log (admin).",
        subcommands: [List.self, Verify.self])

    struct List: ConsoleCommand {
        static let configuration = CommandConfiguration(abstract: "The latest audit entries of the current tenant.")

        @Option(help: "How many entries.") var limit: Int = 50

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let entries = try AuditLog(store: try ctx.existingStore()).list(session: try ctx.session(), limit: limit)
            return CommandOutput(json: ["entries": entries]) { style in
                TextTable(
                    ["SEQ", "TIME", "OPERATOR", "ACTION", "TARGET", "DETAILS"],
                    entries.map { entry in
                        [
                            String(entry.seq), Timestamp.format(entry.at / 1000), entry.operatorName, entry.action,
                            entry.target ?? "-",
                            entry.details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(
                                separator: " "),
                        ]
                    }
                ).render(style)
            }
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
