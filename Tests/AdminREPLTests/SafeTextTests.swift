import BackupModel
import Foundation
import Inspect
import Testing

@testable import AdminREPL

@Suite("Escaping and secret shapes")
struct SafeTextTests {
    @Test("table cells escape every control character; the console's own colours pass")
    func cells() {
        #expect(SafeText.cell("j***@gmail.com") == "j***@gmail.com")
        #expect(SafeText.cell("a\u{1B}]0;owned\u{7}b") == "a\\u{1B}]0;owned\\u{7}b")
        #expect(SafeText.cell("x\u{1B}[2J\u{1B}[Hfake") == "x\\u{1B}[2J\\u{1B}[Hfake")
        #expect(SafeText.cell("one\ntwo\r\t") == "one\\ntwo\\r\\t")
        #expect(SafeText.cell("\u{0}\u{7F}\u{9B}\u{202E}") == "\\u{0}\\u{7F}\\u{9B}\\u{202E}")
        let style = RenderStyle(color: true, width: nil)
        #expect(SafeText.cell(style.red("no")) == style.red("no"))
        #expect(SafeText.cell(style.cyan("id\u{1B}[2J")) == style.cyan("id\\u{1B}[2J"))
        // The very codes the console uses, arriving inside data, cannot recolour the terminal.
        #expect(SafeText.cell("\u{1B}[32mok\u{1B}[0m") == "\\u{1B}[32mok\\u{1B}[0m")
        #expect(SafeText.cell("\u{1B}[1m") == "\\u{1B}[1m")
    }

    @Test("whole outputs keep their lines; styled only when colour is on")
    func outputs() {
        let style = RenderStyle(color: true, width: nil)
        let text = style.bold("head") + "\nrow \u{1B}[1;1H\u{1B}[31m"
        // The console's bold reaches the terminal without its mark; the data's red is escaped.
        #expect(
            SafeText.output(text, keepStyle: true) == "\u{1B}[1mhead\u{1B}[0m\nrow \\u{1B}[1;1H\\u{1B}[31m")
        #expect(!SafeText.output(text, keepStyle: false).contains("\u{1B}"))
        #expect(!SafeText.output(text, keepStyle: true).contains(SafeText.mark))
        // Private-use characters in data are characters: they count in a column's width.
        #expect(visibleWidth("\u{F0000}\u{F0001}x") == 3 && visibleWidth(style.bold("ab")) == 2)
    }

    @Test("a table row stays one row whatever its cells hold")
    func tableRows() {
        let table = TextTable(["A", "B"], [["x\ny", "\u{1B}[2Jz"]]).render(RenderStyle(color: false, width: nil))
        #expect(table.split(separator: "\n").count == 2)
        #expect(!table.contains("\u{1B}"))
    }

    @Test("error messages are one line and hold nothing key-shaped")
    func messages() {
        let key = String(repeating: "0123456789abcdef", count: 4)
        #expect(SafeText.message("the value \(key) here") == "the value <withheld> here")
        #expect(SafeText.message("Unexpected argument 'x\n\u{1B}[2Jy'") == "Unexpected argument 'x\\n\\u{1B}[2Jy'")
        #expect(SafeText.message("token bctl_ab-c.def x") == "token <withheld> x")
        let id = "backup_account_02" + String(repeating: "ab", count: 32)
        #expect(SafeText.message("Backup \(id) not found") == "Backup \(id) not found")
    }

    /// Lines and whether they hold something secret-shaped.
    static let shapeCases: [(String, Bool)] = {
        let quarter = String(repeating: "ab", count: 4)
        func split(_ separator: String) -> String { Array(repeating: quarter, count: 8).joined(separator: separator) }
        var cases: [(String, Bool)] = [
            (String(repeating: "ab", count: 32), true),
            (String(repeating: "ab", count: 16) + " " + String(repeating: "cd", count: 16), true),
            (Array(repeating: "abcd", count: 16).joined(separator: ":"), true),
            (Array(repeating: "0f", count: 32).joined(separator: " "), true),
            ("0x" + String(repeating: "AB", count: 32), true),
            ("k" + String(repeating: "ab", count: 32), true),
            ("lookup account backup_account_02" + String(repeating: "ab", count: 32), false),
            ("lookup keypair 04" + String(repeating: "ab", count: 64), false),
            ("operator add bob --tenant prod --role cleaner", false),
            ("show dead beef cafe", false),
            ("show " + String(repeating: "ab", count: 15), false),
        ]
        // Split by any punctuation, not only spaces and colons, Unicode's too.
        cases += ["-", ",", ".", "/", "_", "|", "\u{B7}", "\u{2013}", "\u{A0}"].map { (split($0), true) }
        // Half a key: a key typed over two lines leaves neither line behind.
        cases += [(String(repeating: "ab", count: 16), true), (String(repeating: "ab", count: 31), true)]
        // base64 and base64url of 32 bytes; reset tokens.
        cases += [
            ("reset begin x " + String(repeating: "Qk", count: 21) + "w=", true),
            (String(repeating: "A-b_", count: 10) + "xyz", true),
            ("reset complete sbx.ZXhhbXBsZQ.c2lnbmF0dXJl", true),
            ("eyJhbGciOiJSU0EtT0FFUCJ9.ZW5j.aXY.Y2lwaGVy.dGFn", true),
        ]
        // Identifiers stay: a UUID, a passkey id of another length, an issuer URL.
        cases += [
            ("cleanup teardown-request 3f2a9c1e-7b4d-4e8f-9a0b-1c2d3e4f5a6b", false),
            ("lookup passkey " + String(repeating: "Qk", count: 20), false),
            ("lookup oidc https://accounts.google.com 1234567890", false),
        ]
        return cases
    }()

    @Test(
        "key shapes: a key's hex digits however split, half of them, base64 of 32 bytes, tokens; identifiers are not keys",
        arguments: shapeCases)
    func shapes(line: String, secret: Bool) {
        #expect(SecretShape.appears(in: line) == secret)
        #expect(History.carriesSecret(line) == secret)
    }

    @Test(
        "history drops secret flags and whatever follows them",
        arguments: [
            "reset complete --token T --signature MEUCIQ",
            "recovery derive --root-key 00",
            "recovery derive --root-key-file k.json",
            "x --signature=abc",
            "operator add x --token-file t",
        ])
    func secretFlags(line: String) {
        #expect(History.carriesSecret(line))
    }

    /// A key typed over several lines in pieces too short to look like one (four lines of 16
    /// digits, a 24/24/16 paste): a line of hex digits alone is no command, and is never kept.
    @Test func historyKeepsNoLineOfHexDigitsAlone() {
        let key = String(repeating: "0123456789abcdef", count: 4)
        for piece in stride(from: 0, to: 64, by: 16).map({ Array(key)[$0..<$0 + 16] }) {
            #expect(History.carriesSecret(String(piece)))
        }
        #expect(History.carriesSecret(String(key.prefix(24))) && History.carriesSecret(String(key.suffix(16))))
        #expect(History.carriesSecret("0123 4567 89ab"))
        #expect(!History.carriesSecret("whoami") && !History.carriesSecret("cafe"))
        #expect(!History.carriesSecret("show 0123456789abcdef0123"))
    }

    @Test("JSON output stays the same JSON value with every control character escaped")
    func jsonLines() async throws {
        let value = "a\u{2028}\u{9B}\u{7F}\u{202E}\u{1B}[2J\n\u{0}b"
        let line = JSONLine.encode(["m": value])
        #expect(!line.unicodeScalars.contains(where: UntrustedText.isControl))
        #expect(line.contains(#"\u2028"#) && line.contains(#"\u009b"#))
        let decoded = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String]
        #expect(decoded == ["m": value])
    }

    /// A lookup's line skips the encoder (``FlatJSONObject``): it must be the encoder's bytes,
    /// escapes and left-out members included, or a script's output would change with the path.
    @Test("a lookup's JSON line is the encoder's, byte for byte")
    func flatLookupLines() throws {
        func encoded(_ result: LookupResult) throws -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return JSONLine.terminalSafe(String(decoding: try encoder.encode(result), as: UTF8.self))
        }
        let controls = String(String.UnicodeScalarView((0..<0x20).compactMap(Unicode.Scalar.init)))
        let awkward = [
            "backup_account_02" + String(repeating: "ab", count: 32), "MAIN#PK|e734DDkpiyL_PQukk8cNUrmDFBkJ",
            "a/b\\c\"d", controls, "\u{7F}\u{9B}\u{2028}\u{202E}é漢🙂", "", "https://accounts.google.com|1234",
        ]
        var results = [
            LookupResult(
                backupId: awkward[0], scope: "MAIN", lookupKey: awkward[1], kind: "passkey", factorId: "f-1"),
            LookupResult(backupId: awkward[0], scope: "ACCOUNT", lookupKey: awkward[0], kind: "account"),
        ]
        for text in awkward {
            results.append(LookupResult(backupId: text, scope: text, lookupKey: text, kind: text, factorId: text))
        }
        for result in results {
            let line = JSONLine.encode(result)
            #expect(line == (try encoded(result)), "\(line)")
            #expect(try JSONDecoder().decode(LookupResult.self, from: Data(line.utf8)) == result)
        }
    }

    @Test("the pager gets the environment without the console's secrets")
    func pagerEnvironment() {
        let env = [
            "PATH": "/usr/bin", "TERM": "xterm", "LESS": "-R", "BACKUPCTL_TOKEN": "bctl_x",
            "BACKUPCTL_DB": "/tmp/db", "GITHUB_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "s", "PGPASSWORD": "p",
            "TURNKEY_API_KEY": "k",
        ]
        #expect(
            Pager.pagerEnvironment(env) == ["PATH": "/usr/bin", "TERM": "xterm", "LESS": "-R"])
        // By name and by value: URLs with credentials, personal access tokens, cookies, and
        // any value of a secret's shape, whatever its name.
        let more = [
            "PATH": "/usr/bin", "DATABASE_URL": "postgres://u:PASS@db:5432/x", "REDIS": "redis://:pw@cache:6379",
            "GH_PAT": "ghp_x", "SESSION_COOKIE": "c", "NOTE": "bctl_" + String(repeating: "A", count: 43),
            "HOMEPAGE_URL": "https://example.com/x", "KEY_HEX": String(repeating: "ab", count: 32),
        ]
        #expect(Pager.pagerEnvironment(more) == ["PATH": "/usr/bin", "HOMEPAGE_URL": "https://example.com/x"])
    }

    @Test("csv escapes control characters like every other format")
    func csvEscapes() {
        let records = ListRecords(["name"], [["a\u{1B}[2Jb\nc\u{9B}d"]])
        let text = StructuredOutput.csv(records)
        #expect(text == #"name"# + "\n" + #"a\u{1B}[2Jb\nc\u{9B}d"#, "\(text)")
    }
}
