import BackupModel

/// The one place where text bound for a terminal is made safe: control characters from outside
/// (imported metadata, remote systems, words the operator typed) are written as escapes, and
/// anything shaped like a key is withheld from messages.
///
/// Escaping is ``UntrustedText/escaped(_:)``; the only escape sequences that pass are the colour
/// codes ``RenderStyle`` writes, behind their ``mark`` (when styled output is allowed). JSON output is left to the
/// JSON encoder, which escapes control characters itself, so JSON stays JSON.
enum SafeText {
    /// The SGR codes ``RenderStyle`` emits: reset, bold, dim, red, green, yellow, cyan.
    static let styleCodes: Set<String> = ["0", "1", "2", "31", "32", "33", "36"]

    /// What precedes each colour code ``RenderStyle`` writes: four scalars of Unicode's
    /// supplementary private use area, three of them drawn at random when the process starts.
    /// Only a code behind it is kept; the same code inside data (an imported path, a remote
    /// message) cannot carry it, and is escaped. ``Terminal`` removes the marks as it writes.
    static let mark: String = {
        var generator = SystemRandomNumberGenerator()
        // Every value of the range is a scalar (none is a surrogate), so none is dropped.
        let values = [0xF0000] + (0..<3).map { _ in UInt32.random(in: 0xF0001...0xFFFFD, using: &generator) }
        return String(String.UnicodeScalarView(values.compactMap(Unicode.Scalar.init)))
    }()
    static let markScalars = Array(mark.unicodeScalars)

    /// `text` without the marks (what reaches the terminal).
    static func unmarked(_ text: String) -> String {
        // The mark's scalars all start with the byte F3 in UTF-8: one pass over the bytes.
        guard !text.allUTF8({ $0 != 0xF3 }) else { return text }
        return text.replacingOccurrences(of: mark, with: "")
    }

    /// A table cell or a `key: value` value: every control character escaped, newlines included,
    /// except ``RenderStyle``'s colour codes.
    static func cell(_ text: String) -> String { escape(text, keepNewlines: false, keepStyle: true) }

    /// A whole table-mode output, as it goes to the terminal or the pager: as ``cell(_:)`` but
    /// line breaks are kept, and the colour codes lose their marks.
    static func output(_ text: String, keepStyle: Bool) -> String {
        unmarked(escape(text, keepNewlines: true, keepStyle: keepStyle))
    }

    /// An error message for stderr in table mode: key-shaped text withheld, then every control
    /// character escaped, so one error is one line.
    static func message(_ text: String) -> String { UntrustedText.escaped(SecretShape.redact(text)) }

    static func escape(_ text: String, keepNewlines: Bool, keepStyle: Bool) -> String {
        let scalars = Array(text.unicodeScalars)
        guard scalars.contains(where: { UntrustedText.isControl($0) || $0 == markScalars[0] }) else { return text }
        var out = String.UnicodeScalarView()
        var i = 0
        while i < scalars.count {
            let s = scalars[i]
            if keepNewlines, s == "\n" {
                out.append(s)
                i += 1
                continue
            }
            if s == markScalars[0], i + markScalars.count < scalars.count,
                Array(scalars[i..<i + markScalars.count]) == markScalars,
                let end = styleSequenceEnd(scalars, from: i + markScalars.count)
            {
                // This console's own colour code: kept (with its mark) when styled output is
                // allowed, else dropped.
                if keepStyle { out.append(contentsOf: scalars[i..<end]) }
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
