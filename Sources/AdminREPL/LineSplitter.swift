import BackupModel
import Foundation

/// Splits a command line into words the way a shell would for the simple cases operators
/// type: whitespace separates, single and double quotes group, backslash escapes.
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
        if quote != nil { throw .usage("Unterminated quote in: \(line.prefix(60))") }
        if escape { throw .usage("The line ends with a lone backslash.") }
        if inWord { words.append(current) }
        return words
    }

    /// A script line: blank lines and `#` comments are skipped (`nil`).
    static func scriptLine(_ raw: String) -> String? {
        let trimmed = raw.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty || trimmed.hasPrefix("#") { return nil }
        return trimmed
    }
}
