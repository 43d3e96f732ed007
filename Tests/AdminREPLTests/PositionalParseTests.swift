import ArgumentParser
import Testing

@testable import AdminREPL

/// The positional fast path must parse exactly what ArgumentParser parses, or step aside.
@Suite("Positional parse")
struct PositionalParseTests {
    static let words: [[String]] = [
        [], ["a"], ["a", "b"], ["a", "b", "c"], [""], ["", ""], ["-x"], ["--sync"], ["a", "--sync"],
        ["--sync", "a"], ["a", "--sync", "--sync"], ["a", "-h"], ["--help"], ["help"], ["a", "help"],
        ["--", "a"], ["-AAA_b"], ["AQID-_w"], ["a b"], ["google", "1234"], ["https://accounts.google.com", "x"],
        ["é", "ü"], ["backup_account_02ab"], ["a", "--"], ["--sync=true", "a"], ["-5iGFbL3U0S4-a91J"],
        ["-5iG", "--sync"], ["--sync", "-5iG"], ["--json"], ["-h"], ["-ab", "-cd"], ["google", "-12"], ["-x", "y"],
        ["--61iK7OJLKtuFE0UgIIO_ssIZ2RIXTVUl9MXkbq"], ["--IfDOXqVvReIL38JA0Y"], ["--json=1"], ["--Ab=c"], ["---"],
    ]

    static let commands: [any PositionalParse.Type] = [
        LookupCommand.Passkey.self, LookupCommand.Oidc.self, LookupCommand.Keypair.self,
        LookupCommand.Account.self, ShowCommand.self,
    ]

    @Test("agrees with ArgumentParser wherever it answers", arguments: 0..<commands.count)
    func agrees(index: Int) async throws {
        let command = Self.commands[index]
        var answered = 0
        for words in Self.words {
            guard let fast = command.parsePositional(words) else { continue }
            answered += 1
            // ArgumentParser reads a leading-dash value only after `--`; the fast path reads it directly.
            let options = words.filter { !LookupCommand.Passkey.isValue($0) }
            let values = words.filter(LookupCommand.Passkey.isValue)
            let full = try #require(
                (try? command.parseAsRoot(words)) ?? (try? command.parseAsRoot(options + ["--"] + values)),
                "ArgumentParser refuses \(words)")
            #expect(String(describing: fast) == String(describing: full), "\(command) \(words)")
        }
        #expect(answered > 0, "\(command) never takes the fast path")
    }

    @Test("options and help are left to ArgumentParser")
    func optionsFallBack() {
        for command in Self.commands {
            for words in [["--help"], ["-h"], ["--json"], ["a", "--json"], ["--", "a"], ["--sync-all"], ["--x=1"]] {
                #expect(command.parsePositional(words) == nil, "\(command) \(words)")
            }
        }
    }

    @Test("the executor takes the fast path for plain words and ArgumentParser for the rest")
    @MainActor func executorParse() async throws {
        let passkey = try Executor.parse(["lookup", "passkey", "AQID"], top: LookupCommand.self)
        #expect((passkey as? LookupCommand.Passkey)?.credentialId == "AQID")
        let sync = try Executor.parse(["lookup", "keypair", "--sync", "02ab"], top: LookupCommand.self)
        #expect((sync as? LookupCommand.Keypair)?.sync == true)
        let show = try Executor.parse(["show", "backup_account_02"], top: ShowCommand.self)
        #expect((show as? ShowCommand)?.backupId == "backup_account_02")
        let dashed = try Executor.parse(["lookup", "passkey", "-5iGFbL3U0S4"], top: LookupCommand.self)
        #expect((dashed as? LookupCommand.Passkey)?.credentialId == "-5iGFbL3U0S4")
        #expect(throws: (any Error).self) { try Executor.parse(["lookup", "passkey", "-x"], top: LookupCommand.self) }
        #expect(throws: (any Error).self) {
            try Executor.parse(["lookup", "passkey", "--json"], top: LookupCommand.self)
        }
        #expect(throws: (any Error).self) { try Executor.parse(["show", "a", "b"], top: ShowCommand.self) }
    }
}
