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
