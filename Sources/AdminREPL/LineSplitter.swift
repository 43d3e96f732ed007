import BackupModel
import Foundation

/// Splits a command line into words the way a shell would for the simple cases operators
/// type: whitespace separates, single and double quotes group, backslash escapes, and an
/// unquoted `#` at the start of a word begins a comment that runs to the end of the line.
enum LineSplitter {
    static func split(_ line: String) throws(ConsoleError) -> [String] {
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
