import BackupModel
import Foundation

/// Splits a command line into words the way a shell would for the simple cases operators
/// type: whitespace separates, single and double quotes group, backslash escapes, and an
/// unquoted `#` at the start of a word begins a comment that runs to the end of the line.
enum LineSplitter {
    static func split(_ line: String) throws(ConsoleError) -> [String] {
        if let words = splitASCII(line) { return words }
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        var escape = false
        for ch in line {
            if escape {
                current.append(ch)
                escape = false
                continue
            }
            if let q = quote {
                if ch == q {
                    quote = nil
                } else if ch == "\\" && q == "\"" {
                    escape = true
                } else {
                    current.append(ch)
                }
                continue
            }
            if ch == "#", !inWord { break }
            switch ch {
            case "\\":
                escape = true
                inWord = true
            case "\"", "'":
                quote = ch
                inWord = true
            case " ", "\t":
                if inWord {
                    words.append(current)
                    current = ""
                    inWord = false
                }
            default:
                current.append(ch)
                inWord = true
            }
        }
        if quote != nil { throw .usage("Unterminated quote in: \(SecretShape.excerpt(line, limit: 60))") }
        if escape { throw .usage("The line ends with a lone backslash.") }
        if inWord { words.append(current) }
        return words
    }

    /// ``split(_:)`` of an ASCII line, byte by byte (a script of lookups is ASCII; walking it
    /// by `Character` was a tenth of a line's cost). `nil` for a line with any other byte: in
    /// ASCII every byte is one character (`\r\n` aside, which no rule separates), so the two
    /// agree on every line this takes.
    private static func splitASCII(_ line: String) -> [String]? {
        var line = line
        return line.withUTF8 { bytes -> [String]? in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            var words: [String] = []
            var current: [UInt8] = []
            var inWord = false
            var quote: UInt8?
            var escape = false
            for byte in bytes {
                if escape {
                    current.append(byte)
                    escape = false
                    continue
                }
                if let q = quote {
                    if byte == q {
                        quote = nil
                    } else if byte == UInt8(ascii: "\\"), q == UInt8(ascii: "\"") {
                        escape = true
                    } else {
                        current.append(byte)
                    }
                    continue
                }
                if byte == UInt8(ascii: "#"), !inWord { break }
                switch byte {
                case UInt8(ascii: "\\"):
                    escape = true
                    inWord = true
                case UInt8(ascii: "\""), UInt8(ascii: "'"):
                    quote = byte
                    inWord = true
                case UInt8(ascii: " "), UInt8(ascii: "\t"):
                    if inWord {
                        words.append(String(decoding: current, as: UTF8.self))
                        current.removeAll(keepingCapacity: true)
                        inWord = false
                    }
                default:
                    current.append(byte)
                    inWord = true
                }
            }
            // An open quote or a lone backslash: the general walk says which.
            if quote != nil || escape { return nil }
            if inWord { words.append(String(decoding: current, as: UTF8.self)) }
            return words
        }
    }

    /// A script line: blank lines and `#` comments are skipped (`nil`).
    /// Surrounding whitespace goes, including the `\r` of a script saved with CRLF endings.
    static func scriptLine(_ raw: String) -> String? {
        let scalars = raw.unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }),
            scalars[start] != "#"
        else { return nil }
        return String(scalars[start...last])
    }
}
