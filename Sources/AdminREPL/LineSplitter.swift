import BackupModel
import Foundation

/// Splits a command line into words the way a shell would for the simple cases operators
/// type: whitespace separates, single and double quotes group, backslash escapes, and an
/// unquoted `#` at the start of a word begins a comment that runs to the end of the line.
enum LineSplitter {
    static func split(_ line: String) throws(ConsoleError) -> [String] {
        // A script of lookups is ASCII: walked byte by byte, where walking it by `Character`
        // was a tenth of a line's cost. In ASCII every byte is one character (`\r\n` aside,
        // which no rule separates), so both walks agree on every line the first takes.
        var text = line
        if let words = text.withUTF8(plainWords) { return words }
        let split =
            text.withUTF8 { bytes in
                bytes.allSatisfy { $0 < 0x80 }
                    ? walk(bytes, UInt8.init(ascii:)) { String(decoding: $0, as: UTF8.self) } : nil
            } ?? walk(line, Character.init) { String($0) }
        if split.open == .quote { throw .usage("Unterminated quote in: \(SecretShape.excerpt(line, limit: 60))") }
        if split.open == .escape { throw .usage("The line ends with a lone backslash.") }
        return split.words
    }

    /// The words of an ASCII line without quotes, backslashes or `#` (a script's lookups): its
    /// runs between spaces and tabs, as ``walk(_:_:word:)`` makes them, cut straight from the
    /// line's bytes; `nil` for any other line, which the walk takes. A script's lines are all
    /// split before the first runs (its check), on the main actor.
    static func plainWords(_ bytes: UnsafeBufferPointer<UInt8>) -> [String]? {
        var words: [String] = []
        var start: Int?
        for (index, byte) in bytes.enumerated() {
            switch byte {
            case 0x80..., UInt8(ascii: "\\"), UInt8(ascii: "\""), UInt8(ascii: "'"), UInt8(ascii: "#"):
                return nil
            case UInt8(ascii: " "), UInt8(ascii: "\t"):
                if let first = start {
                    words.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[first..<index]), as: UTF8.self))
                    start = nil
                }
            default:
                if start == nil { start = index }
            }
        }
        if let first = start {
            words.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[first...]), as: UTF8.self))
        }
        return words
    }

    /// What a line left open at its end.
    private enum Open { case nothing, quote, escape }

    /// The splitting rules over a line's units (its bytes or its characters); `symbol` makes
    /// the unit of an ASCII symbol, `word` the text of a word's units.
    private static func walk<Unit: Equatable>(
        _ units: some Sequence<Unit>, _ symbol: (Unicode.Scalar) -> Unit, word: ([Unit]) -> String
    ) -> (words: [String], open: Open) {
        let (backslash, doubleQuote, singleQuote) = (symbol("\\"), symbol("\""), symbol("'"))
        let (hash, space, tab) = (symbol("#"), symbol(" "), symbol("\t"))
        var words: [String] = []
        var current: [Unit] = []
        var inWord = false
        var quote: Unit?
        var escape = false
        for unit in units {
            if escape {
                current.append(unit)
                escape = false
                continue
            }
            if let q = quote {
                if unit == q {
                    quote = nil
                } else if unit == backslash, q == doubleQuote {
                    escape = true
                } else {
                    current.append(unit)
                }
                continue
            }
            if unit == hash, !inWord { break }
            if unit == backslash {
                escape = true
                inWord = true
            } else if unit == doubleQuote || unit == singleQuote {
                quote = unit
                inWord = true
            } else if unit == space || unit == tab {
                if inWord {
                    words.append(word(current))
                    current.removeAll(keepingCapacity: true)
                    inWord = false
                }
            } else {
                current.append(unit)
                inWord = true
            }
        }
        if quote != nil { return (words, .quote) }
        if escape { return (words, .escape) }
        if inWord { words.append(word(current)) }
        return (words, .nothing)
    }

    /// A script line: blank lines and `#` comments are skipped (`nil`).
    /// Surrounding whitespace goes, including the `\r` of a script saved with CRLF endings.
    static func scriptLine(_ raw: String) -> String? {
        // Most lines begin and end with a visible ASCII character (no ASCII whitespace is one,
        // and no other scalar begins or ends with those bytes): nothing to trim.
        if let first = raw.utf8.first, let last = raw.utf8.last, (0x21..<0x7F).contains(first),
            (0x21..<0x7F).contains(last)
        {
            return first == UInt8(ascii: "#") ? nil : raw
        }
        let scalars = raw.unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }),
            scalars[start] != "#"
        else { return nil }
        return String(scalars[start...last])
    }

    /// A script's text as lines: split at each `\n`, and a `\r` just before one goes with it (a
    /// script saved with CRLF endings); any other `\r` stays. Bytes that are not UTF-8 become
    /// U+FFFD. Split by bytes, not by `Character` (a script of 100,000 lines spent a twentieth
    /// of its time there); no grapheme joins a `\n` to its neighbours but `\r\n`, so the lines
    /// are the same.
    static func lines(of data: some BidirectionalCollection<UInt8>) -> [String] {
        var lines: [String] = []
        var start = data.startIndex
        var index = start
        while index != data.endIndex {
            if data[index] == UInt8(ascii: "\n") {
                let text = data[start..<index]
                lines.append(
                    String(decoding: text.last == UInt8(ascii: "\r") ? text.dropLast() : text, as: UTF8.self))
                start = data.index(after: index)
            }
            index = data.index(after: index)
        }
        lines.append(String(decoding: data[start..<index], as: UTF8.self))
        return lines
    }
}
