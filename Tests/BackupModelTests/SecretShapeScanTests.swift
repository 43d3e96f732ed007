import Testing

@testable import BackupModel

/// A line is filtered over its characters read once (``SecretShape/scannedRanges(_:halfKeys:)``);
/// it must find exactly what the `Character` detectors find, on lines built from the pieces the
/// rules are about — hex runs around 32 and 64 digits, `0x`, UUIDs, 43/44-character base64,
/// tokens, JWTs, URLs with credentials — joined by every kind of separator, `\r\n`, control
/// bytes, combining marks, fullwidth digits and other non-ASCII characters included.
struct SecretShapeScanTests {
    /// A small deterministic generator (xorshift), so a failure names a seed that reproduces it.
    struct Lines {
        var state: UInt64

        mutating func next(_ bound: Int) -> Int {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Int(state % UInt64(bound))
        }

        mutating func hex(_ count: Int) -> String {
            String((0..<count).map { _ in Array("0123456789abcdefABCDEF")[next(22)] })
        }

        mutating func base64(_ count: Int) -> String {
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_")
            return String((0..<count).map { _ in alphabet[next(alphabet.count)] })
        }

        mutating func piece() -> String {
            switch next(18) {
            case 0: return hex([31, 32, 33, 63, 64, 65, 66, 130][next(8)])
            case 1: return hex(16) + ["-", " ", ":", "\r\n", "_", "."][next(6)] + hex(16)
            case 2: return (0..<4).map { _ in hex(16) }.joined(separator: ["-", " ", "\n", ","][next(4)])
            case 3: return hex(8) + "-" + hex(4) + "-" + hex(4) + "-" + hex(4) + "-" + hex(12)
            case 4: return ["0x", "0X", "k", "id="][next(4)] + hex([32, 40, 64, 65][next(4)])
            case 5: return base64([42, 43, 44][next(3)]) + ["", "=", "==", "."][next(4)]
            case 6: return ["bctl_", "BCTL_", "sbx.", "SBX.", "eyJ"][next(5)] + base64(next(12))
            case 7: return "eyJ" + base64(6) + "." + base64(8) + ["", "." + base64(5)][next(2)]
            case 8:
                return ["postgres", "https"][next(2)] + "://" + ["u:p", "user", "a:b:c", ":x"][next(4)]
                    + ["@h/db", "@h", "/x@y:z", ""][next(4)]
            case 9: return ["\"", "'", "`", "(", ")", "[", "]", "<", ">", "|", "=", "@", "://"][next(13)]
            case 10: return [" ", "  ", "\t", "\r\n", "\n", "\u{0B}", "\u{0C}", "\u{1C}", "\u{7F}", "\u{01}"][next(10)]
            case 11: return ["backup_account_", "passkey", "MAIN#PK|", "error[x]:", "a", "z9", "_"][next(7)]
            case 12: return hex(next(70))
            case 16:
                return ["…", "é", "e\u{301}", "０１２３ａｂ", "\u{A0}", "·", "–", "😀", "\u{301}", "Ｋ", "ſ", "\u{2028}"][
                    next(12)]
            case 17: return hex(next(40)) + ["\u{301}", "０", "ｆ", "…", "\u{A0}"][next(5)] + hex(next(40))
            case 13: return base64(next(50))
            default:
                return String((0..<next(8)).map { _ in Character(Unicode.Scalar(UInt8(next(128)))) })
            }
        }

        mutating func line() -> String {
            (0..<(1 + next(9))).map { _ in piece() + (next(3) == 0 ? "" : [" ", "-", ",", "\r\n"][next(4)]) }.joined()
        }
    }

    static func byteOffsets(_ line: String, _ ranges: [Range<String.Index>]) -> [Range<Int>] {
        let utf8 = line.utf8
        return SecretShape.merged(
            ranges.map {
                utf8.distance(
                    from: utf8.startIndex, to: $0.lowerBound)..<utf8.distance(
                        from: utf8.startIndex, to: $0.upperBound)
            })
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func theScanFindsWhatTheCharacterDetectorsFind(seed: UInt64) {
        var lines = Lines(state: seed &* 0x9E37_79B9_7F4A_7C15 | 1)
        var withSecrets = 0
        var without = 0
        for _ in 0..<2_000 {
            let line = lines.line()
            for halfKeys in [true, false] {
                let scanned = Self.byteOffsets(line, SecretShape.scannedRanges(line, halfKeys: halfKeys))
                let characters = Self.byteOffsets(line, CharacterDetectors.characterRanges(line, halfKeys: halfKeys))
                #expect(scanned == characters, "seed \(seed) halfKeys \(halfKeys): \(line.debugDescription)")
                if characters.isEmpty { without += 1 } else { withSecrets += 1 }
            }
            #expect(SecretShape.redact(line) == Self.redactByCharacters(line))
        }
        // The generator reaches both sides of the rules.
        #expect(withSecrets > 100 && without > 100, "\(withSecrets) with secrets, \(without) without")
    }

    static func redactByCharacters(_ line: String) -> String {
        var out = line
        let joined = SecretShape.merged(CharacterDetectors.characterRanges(line, halfKeys: true))
        for range in joined.reversed() { out.replaceSubrange(range, with: "<withheld>") }
        return out
    }

    @Test func keysBesideNonASCIIAndSplitOverALineBreak() {
        let key = String(repeating: "0123456789abcdef", count: 4)
        #expect(SecretShape.redact("clé \(key)") == "clé <withheld>")
        #expect(SecretShape.redact("clé…\(key)…") == "clé…<withheld>…")
        #expect(SecretShape.redact("key \(key)") == "key <withheld>")
        // A key split over a CRLF is one chain on both paths.
        let split = String(key.prefix(32)) + "\r\n" + String(key.suffix(32))
        #expect(SecretShape.redact("k: \(split) end") == "k: <withheld> end")
    }
}

/// The filter's rules as they were first written, walking `String.Index`es over `Character`s
/// once per rule: the reference the scan is held equal to.
enum CharacterDetectors {
    static func characterRanges(_ line: String, halfKeys: Bool) -> [Range<String.Index>] {
        (tokens(line) + base64Keys(line) + hexKeys(line, halfKeys: halfKeys) + SecretShape.urlPasswords(line)).sorted {
            $0.lowerBound < $1.lowerBound
        }
    }

    /// `bctl_…`, `sbx.…` and `eyJ….….…`, each to the next space, quote or backtick.
    static func tokens(_ line: String) -> [Range<String.Index>] {
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
    static func base64Keys(_ line: String) -> [Range<String.Index>] {
        var ranges: [Range<String.Index>] = []
        var i = line.startIndex
        while i < line.endIndex {
            guard SecretShape.isBase64(line[i]) else {
                i = line.index(after: i)
                continue
            }
            var j = i
            while j < line.endIndex, SecretShape.isBase64(line[j]) { j = line.index(after: j) }
            var end = j
            if end < line.endIndex, line[end] == "=" { end = line.index(after: end) }
            let count = line.distance(from: i, to: j)
            let padded = end != j
            if count == 43 && (!padded || line.distance(from: i, to: end) == 44) { ranges.append(i..<end) }
            i = end
        }
        return ranges
    }

    /// Chains of hex words (each at most 64 digits) joined by separators; a UUID is no link.
    static func hexKeys(_ line: String, halfKeys: Bool) -> [Range<String.Index>] {
        var words: [(range: Range<String.Index>, digits: Int?)] = []
        var ranges: [Range<String.Index>] = []
        var i = line.startIndex
        while i < line.endIndex {
            // Any run of separators joins (a line break too: a key pasted over two lines).
            if SecretShape.isSeparator(line[i]) {
                i = line.index(after: i)
                continue
            }
            var j = i
            while j < line.endIndex, !SecretShape.isSeparator(line[j]) { j = line.index(after: j) }
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
    static func exactRuns(_ word: Substring, halfKeys: Bool) -> [Range<String.Index>] {
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
    static func isUUID(_ text: Substring) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        return groups.map(\.count) == [8, 4, 4, 4, 12] && groups.allSatisfy { $0.allSatisfy(\.isHexDigit) }
    }

    static func startsWord(_ line: String, _ i: String.Index) -> Bool {
        guard i > line.startIndex else { return true }
        let before = line[line.index(before: i)]
        return !(before.isLetter || before.isNumber)
    }
}
