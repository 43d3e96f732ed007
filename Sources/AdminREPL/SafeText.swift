import BackupModel

/// The one place where text bound for a terminal is made safe: control characters from outside
/// (imported metadata, remote systems, words the operator typed) are written as escapes, and
/// anything shaped like a key is withheld from messages.
///
/// Escaping is ``UntrustedText/escaped(_:)``; the only escape sequences that pass are the exact
/// colour codes ``RenderStyle`` writes (when styled output is allowed). JSON output is left to the
/// JSON encoder, which escapes control characters itself, so JSON stays JSON.
enum SafeText {
    /// The SGR codes ``RenderStyle`` emits: reset, bold, dim, red, green, yellow, cyan.
    static let styleCodes: Set<String> = ["0", "1", "2", "31", "32", "33", "36"]

    /// A table cell or a `key: value` value: every control character escaped, newlines included,
    /// except ``RenderStyle``'s colour codes.
    static func cell(_ text: String) -> String { escape(text, keepNewlines: false, keepStyle: true) }

    /// A whole table-mode output: as ``cell(_:)`` but line breaks are kept.
    static func output(_ text: String, keepStyle: Bool) -> String {
        escape(text, keepNewlines: true, keepStyle: keepStyle)
    }

    /// An error message for stderr in table mode: key-shaped text withheld, then every control
    /// character escaped, so one error is one line.
    static func message(_ text: String) -> String { UntrustedText.escaped(SecretShape.redact(text)) }

    static func escape(_ text: String, keepNewlines: Bool, keepStyle: Bool) -> String {
        let scalars = Array(text.unicodeScalars)
        guard scalars.contains(where: UntrustedText.isControl) else { return text }
        var out = String.UnicodeScalarView()
        var i = 0
        while i < scalars.count {
            let s = scalars[i]
            if keepNewlines, s == "\n" {
                out.append(s)
                i += 1
                continue
            }
            if keepStyle, s == "\u{1B}", let end = styleSequenceEnd(scalars, from: i) {
                out.append(contentsOf: scalars[i..<end])
                i = end
                continue
            }
            if UntrustedText.isControl(s) {
                out.append(contentsOf: UntrustedText.escaped(String(s)).unicodeScalars)
            } else {
                out.append(s)
            }
            i += 1
        }
        return String(out)
    }

    /// The end of `ESC [ code m` at `start` when `code` is one of ``styleCodes``.
    private static func styleSequenceEnd(_ s: [Unicode.Scalar], from start: Int) -> Int? {
        guard start + 3 < s.count, s[start + 1] == "[" else { return nil }
        var j = start + 2
        var code = ""
        while j < s.count, j < start + 5, ("0"..."9").contains(s[j]) {
            code.unicodeScalars.append(s[j])
            j += 1
        }
        guard j < s.count, s[j] == "m", styleCodes.contains(code) else { return nil }
        return j + 1
    }
}

/// What a root key, private key or token looks like in a line of text.
///
/// A key is 64 hex digits: in one run, or split by spaces or punctuation into several hex-only
/// words (two 32-digit halves, groups of four). A single hex run of another length (a 66-digit
/// backup id, a 130-digit public key) is not a secret. Operator tokens start with `bctl_`.
enum SecretShape {
    /// Whether the line holds anything key- or token-shaped.
    static func appears(in line: String) -> Bool {
        !secretRanges(line).isEmpty
    }

    /// `line` with each key- or token-shaped stretch replaced by `<withheld>`. Messages are
    /// stricter than history: a single hex run of 32 to 64 digits (half a key) goes too.
    static func redact(_ line: String) -> String {
        let ranges = secretRanges(line, halfKeys: true)
        guard !ranges.isEmpty else { return line }
        var out = line
        for range in ranges.reversed() { out.replaceSubrange(range, with: "<withheld>") }
        return out
    }

    /// Chains of hex-only words (joined by separators) whose digits add up to 64 or more, unless
    /// the chain is one word of a length other than 64; and `bctl_` words.
    static func secretRanges(_ line: String, halfKeys: Bool = false) -> [Range<String.Index>] {
        var ranges: [Range<String.Index>] = []
        // Each word, whether it is all hex, its digits, and whether only spaces or colons
        // separate it from the word before (how a key is split; a UUID's dashes or a list's
        // commas do not join).
        var words: [(range: Range<String.Index>, hex: Bool, digits: Int, joined: Bool)] = []
        var i = line.startIndex
        var gapIsJoin = true
        while i < line.endIndex {
            if isSeparator(line[i]) {
                if !(line[i].isWhitespace || line[i] == ":") { gapIsJoin = false }
                i = line.index(after: i)
                continue
            }
            let joined = gapIsJoin
            gapIsJoin = true
            var j = i
            while j < line.endIndex, !isSeparator(line[j]) { j = line.index(after: j) }
            if line[i..<j].lowercased().hasPrefix("bctl_") {
                // A token runs to the next space, whatever punctuation its alphabet has.
                while j < line.endIndex, !line[j].isWhitespace { j = line.index(after: j) }
                ranges.append(i..<j)
                words.append((i..<j, false, 0, joined))
                i = j
                continue
            }
            var word = line[i..<j]
            if word.hasPrefix("0x") || word.hasPrefix("0X") { word = word.dropFirst(2) }
            let hex = !word.isEmpty && word.allSatisfy(\.isHexDigit)
            words.append((i..<j, hex, hex ? word.count : 0, joined))
            if !hex { ranges += exactRuns(line[i..<j], halfKeys: halfKeys) }
            i = j
        }
        var k = 0
        while k < words.count {
            guard words[k].hex else {
                k += 1
                continue
            }
            var end = k + 1
            var digits = words[k].digits
            while end < words.count, words[end].hex, words[end].joined {
                digits += words[end].digits
                end += 1
            }
            let single = end - k == 1
            let keyRun = digits == 64 || (halfKeys && (32...64).contains(digits))
            if (single && keyRun) || (!single && digits >= 64) {
                ranges.append(words[k].range.lowerBound..<words[end - 1].range.upperBound)
            }
            k = end
        }
        return ranges.sorted { $0.lowerBound < $1.lowerBound }
    }

    /// Runs of exactly 64 hex digits (32 to 64 with `halfKeys`) inside a word that is not all hex (`k<key>`, `key_<key>`).
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

    /// Spaces and the punctuation a key might be split or wrapped with; `_` joins (backup ids).
    private static func isSeparator(_ c: Character) -> Bool {
        c.isWhitespace || ":-,.;=/'\"()[]{}<>|+".contains(c)
    }
}
