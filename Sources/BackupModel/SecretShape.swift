/// The one secret filter of the console: what a root key, private key, operator token or reset
/// token looks like in a line of text (history, error messages), and which environment
/// variables carry one (the pager's environment).
///
/// By shape:
/// - 64 hex digits in one run, or split into hex-only words by spaces or any punctuation (`-`,
///   `,`, `.`, `/`, `_`, `|`, …): two 32-digit halves, groups of four. A hex run longer than 64
///   (a 66-digit backup id, a 130-digit public key) is no key and breaks a chain.
/// - with `halfKeys` (history and messages): 32 to 63 such digits too, so a key typed over two
///   lines leaves neither half behind; a UUID (8-4-4-4-12) is an identifier and stays.
/// - base64 or base64url of exactly 32 bytes (43 characters, or 44 ending in `=`).
/// - an operator token (`bctl_…`), a sandbox reset token (`sbx.…`), a JWE or JWT (`eyJ…` with
///   dots).
/// - the `user:password` of a URL (`https://user:password@host`).
///
/// By name (environment variables): `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*PASSWD*`,
/// `*PASSPHRASE*`, `*PRIVATE*`, `*API_KEY*`, `*ROOT_KEY*`, `*CREDENTIAL*`, `*COOKIE*`,
/// `*SESSION*`, `*SIGNATURE*`, a word `KEY`, `AUTH`, `PAT`, `PEM`, … in the name (`OPENAI_KEY`,
/// `AWS_ACCESS_KEY_ID`, `GH_AUTH`); by value: a URL with credentials (`postgres://u:PASS@…`), a
/// PEM private key, a Root Key's JSON, and anything of a secret's shape.
public enum SecretShape {
    /// Whether the line holds anything secret-shaped.
    public static func appears(in line: String, halfKeys: Bool = true) -> Bool {
        !secretRanges(line, halfKeys: halfKeys).isEmpty
    }

    /// `line` with each secret-shaped stretch replaced by `<withheld>`.
    public static func redact(_ line: String) -> String {
        let ranges = merged(secretRanges(line, halfKeys: true))
        guard !ranges.isEmpty else { return line }
        var out = line
        for range in ranges.reversed() { out.replaceSubrange(range, with: "<withheld>") }
        return out
    }

    /// How an error quotes what it was given: the first `limit` characters in double quotes, or
    /// `<withheld>` when the text holds anything secret-shaped. The whole text is judged before
    /// it is cut, since the first 24 characters of a pasted private key are too short to look
    /// like one and are still most of its secret.
    public static func quoted(_ text: some StringProtocol, limit: Int) -> String {
        let whole = String(text)
        return appears(in: whole) ? "<withheld>" : "\"" + whole.prefix(limit) + "\""
    }

    /// ``quoted(_:limit:)`` without the quotes: the first `limit` characters, or `<withheld>`.
    public static func excerpt(_ text: some StringProtocol, limit: Int) -> String {
        let whole = String(text)
        return appears(in: whole) ? "<withheld>" : String(whole.prefix(limit))
    }

    /// Whether an environment variable must not reach a child process (the pager).
    public static func isSecret(variable name: String, value: String) -> Bool {
        let upper = name.uppercased()
        let names = [
            "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "PRIVATE", "API_KEY", "APIKEY", "ROOT_KEY",
            "CREDENTIAL", "COOKIE", "SESSION", "SIGNATURE", "SSHPASS", "WEBHOOK",
        ]
        // Whole words of the name: `OPENAI_KEY`, `AWS_ACCESS_KEY_ID`, `GH_AUTH` (not `KEYBOARD`).
        let words: Set<Substring> = ["KEY", "KEYS", "AUTH", "PAT", "PEM", "PSK", "JWT", "BEARER", "PASS", "PW", "PWD"]
        if upper.hasPrefix("BACKUPCTL_") || names.contains(where: upper.contains)
            || upper.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).contains(where: words.contains)
        {
            return true
        }
        // A PEM private key, a Root Key's JSON (its `key` may be any string in V0).
        if value.contains("PRIVATE KEY") || (value.contains("\"key\"") && value.contains("\"version\"")) {
            return true
        }
        return hasURLCredentials(value) || appears(in: value, halfKeys: false)
    }

    /// `scheme://user:password@…` (or a user alone) anywhere in the text.
    public static func hasURLCredentials(_ text: String) -> Bool {
        var rest = Substring(text)
        while let scheme = rest.range(of: "://") {
            let authority = rest[scheme.upperBound...].prefix { !"/?#".contains($0) && !$0.isWhitespace }
            if authority.contains("@") { return true }
            rest = rest[scheme.upperBound...]
        }
        return false
    }

    // MARK: Detectors

    static func secretRanges(_ line: String, halfKeys: Bool) -> [Range<String.Index>] {
        scannedRanges(line, halfKeys: halfKeys)
    }

    /// The `user:password` of each `scheme://user:password@host` (a user alone is no secret).
    static func urlPasswords(_ line: String) -> [Range<String.Index>] {
        var ranges: [Range<String.Index>] = []
        var rest = line[...]
        while let scheme = rest.range(of: "://") {
            let authority = rest[scheme.upperBound...].prefix { !"/?#".contains($0) && !$0.isWhitespace }
            if let at = authority.lastIndex(of: "@"), authority[..<at].contains(":") {
                ranges.append(scheme.upperBound..<at)
            }
            rest = rest[scheme.upperBound...]
        }
        return ranges
    }

    static func isBase64(_ c: Character) -> Bool {
        guard let byte = c.asciiValue else { return false }
        return base64Bytes[Int(byte)]
    }

    /// ASCII letters, digits and `+/-_`, by byte (this runs over every error a script prints).
    private static let base64Bytes: [Bool] = (0..<128).map { byte in
        let c = Character(Unicode.Scalar(UInt8(byte)))
        return c.isLetter || c.isNumber || "+/-_".contains(c)
    }

    /// ASCII whitespace and the separators of ``isSeparator(_:)``, by byte.
    private static let separatorBytes: [Bool] = (0..<128).map { byte in
        let c = Character(Unicode.Scalar(UInt8(byte)))
        return c.isWhitespace || ":-,.;=/'\"()[]{}<>|+_`*#!?&%$~^\\".contains(c)
    }

    /// Spaces and the punctuation a key might be split or wrapped with.
    static func isSeparator(_ c: Character) -> Bool {
        if let byte = c.asciiValue { return separatorBytes[Int(byte)] }
        // Any Unicode space or punctuation too (`·`, `–`, `…`, a no-break space).
        return c.isWhitespace || c.isPunctuation || c.isSymbol
    }

    /// Overlapping ranges joined (a token that is also base64-shaped is withheld once).
    static func merged<Bound: Comparable>(_ ranges: [Range<Bound>]) -> [Range<Bound>] {
        var out: [Range<Bound>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = out.last, range.lowerBound <= last.upperBound {
                out[out.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                out.append(range)
            }
        }
        return out
    }
}
