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
        (tokens(line) + base64Keys(line) + hexKeys(line, halfKeys: halfKeys) + urlPasswords(line)).sorted {
            $0.lowerBound < $1.lowerBound
        }
    }

    /// The `user:password` of each `scheme://user:password@host` (a user alone is no secret).
    private static func urlPasswords(_ line: String) -> [Range<String.Index>] {
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

    /// `bctl_…`, `sbx.…` and `eyJ….….…`, each to the next space, quote or backtick.
    private static func tokens(_ line: String) -> [Range<String.Index>] {
        var ranges: [Range<String.Index>] = []
        var i = line.startIndex
        while i < line.endIndex {
            // Only where a word starts, and only a word that begins like a token is measured:
            // one pass over the line.
            if startsWord(line, i) {
                let rest = line[i...]
                let lower = rest.prefix(5).lowercased()
                let named = lower.hasPrefix("bctl_") || lower.hasPrefix("sbx.")
                if named || rest.hasPrefix("eyJ") {
                    let end = rest.firstIndex { $0.isWhitespace || "\"'`".contains($0) } ?? line.endIndex
                    // A bare prefix (`bctl_` with nothing after it, as a message names the
                    // format) holds no secret.
                    let bare = named && line[i..<end].count <= (lower.hasPrefix("bctl_") ? 5 : 4)
                    if !bare && (named || line[i..<end].filter({ $0 == "." }).count >= 2) {
                        ranges.append(i..<end)
                        i = end
                        continue
                    }
                }
            }
            i = line.index(after: i)
        }
        return ranges
    }

    /// Runs of the base64 alphabets of exactly 43 characters (44 with one `=`): 32 bytes.
    private static func base64Keys(_ line: String) -> [Range<String.Index>] {
        var ranges: [Range<String.Index>] = []
        var i = line.startIndex
        while i < line.endIndex {
            guard isBase64(line[i]) else {
                i = line.index(after: i)
                continue
            }
            var j = i
            while j < line.endIndex, isBase64(line[j]) { j = line.index(after: j) }
            var end = j
            if end < line.endIndex, line[end] == "=" { end = line.index(after: end) }
            let count = line.distance(from: i, to: j)
            let padded = end != j
            if count == 43 && (!padded || line.distance(from: i, to: end) == 44) { ranges.append(i..<end) }
            i = end
        }
        return ranges
    }

    private static func isBase64(_ c: Character) -> Bool {
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

    /// Chains of hex words (each at most 64 digits) joined by separators; a UUID is no link.
    private static func hexKeys(_ line: String, halfKeys: Bool) -> [Range<String.Index>] {
        var words: [(range: Range<String.Index>, digits: Int?)] = []
        var ranges: [Range<String.Index>] = []
        var i = line.startIndex
        while i < line.endIndex {
            // Any run of separators joins (a line break too: a key pasted over two lines).
            if isSeparator(line[i]) {
                i = line.index(after: i)
                continue
            }
            var j = i
            while j < line.endIndex, !isSeparator(line[j]) { j = line.index(after: j) }
            var word = line[i..<j]
            if word.hasPrefix("0x") || word.hasPrefix("0X") { word = word.dropFirst(2) }
            if !word.isEmpty, word.allSatisfy(\.isHexDigit), word.count <= 64 {
                words.append((i..<j, word.count))
            } else {
                words.append((i..<j, nil))
                ranges += exactRuns(line[i..<j], halfKeys: halfKeys)
            }
            i = j
        }
        // A UUID (8-4-4-4-12, dashes only) is an identifier: its words join no chain.
        var k = 0
        while k + 4 < words.count {
            let range = words[k].range.lowerBound..<words[k + 4].range.upperBound
            if isUUID(line[range]) {
                for n in k...(k + 4) { words[n].digits = nil }
                k += 5
            } else {
                k += 1
            }
        }
        var chain: [(range: Range<String.Index>, digits: Int)] = []
        func close() {
            defer { chain = [] }
            guard let first = chain.first, let last = chain.last else { return }
            let digits = chain.reduce(0) { $0 + $1.digits }
            let whole = digits >= 64 && (chain.count > 1 || digits == 64)
            if whole || (halfKeys && (32..<64).contains(digits)) {
                ranges.append(first.range.lowerBound..<last.range.upperBound)
            }
        }
        for word in words {
            if let digits = word.digits { chain.append((word.range, digits)) } else { close() }
        }
        close()
        return ranges
    }

    /// Runs of exactly 64 hex digits (32 to 64 with `halfKeys`) inside a word that is not all
    /// hex (`k<key>`).
    private static func exactRuns(_ word: Substring, halfKeys: Bool) -> [Range<String.Index>] {
        var out: [Range<String.Index>] = []
        var start: String.Index?
        var count = 0
        var i = word.startIndex
        while true {
            let isHex = i < word.endIndex && word[i].isHexDigit
            if isHex {
                if start == nil { start = i }
                count += 1
            } else {
                if let s = start, count == 64 || (halfKeys && (32...64).contains(count)) { out.append(s..<i) }
                start = nil
                count = 0
            }
            guard i < word.endIndex else { break }
            i = word.index(after: i)
        }
        return out
    }

    /// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (a sub-org or organization id).
    private static func isUUID(_ text: Substring) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        return groups.map(\.count) == [8, 4, 4, 4, 12] && groups.allSatisfy { $0.allSatisfy(\.isHexDigit) }
    }

    private static func startsWord(_ line: String, _ i: String.Index) -> Bool {
        guard i > line.startIndex else { return true }
        let before = line[line.index(before: i)]
        return !(before.isLetter || before.isNumber)
    }

    /// Spaces and the punctuation a key might be split or wrapped with.
    private static func isSeparator(_ c: Character) -> Bool {
        if let byte = c.asciiValue { return separatorBytes[Int(byte)] }
        // Any Unicode space or punctuation too (`·`, `–`, `…`, a no-break space).
        return c.isWhitespace || c.isPunctuation || c.isSymbol
    }

    /// Overlapping ranges joined (a token that is also base64-shaped is withheld once).
    private static func merged(_ ranges: [Range<String.Index>]) -> [Range<String.Index>] {
        var out: [Range<String.Index>] = []
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
