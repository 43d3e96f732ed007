import BackupModel
import Foundation

/// What a command produced: one JSON document and its human rendering.
///
/// Commands build both from the same values so `--format json` and the table never disagree.
struct CommandOutput {
    /// Encoded as exactly one line in JSON mode; `nil` means the command prints nothing.
    var json: (any Encodable)?
    /// Rendered in table mode.
    var text: (RenderStyle) -> String
    /// Set when the command produced its document but the outcome is a failure (a broken audit
    /// chain, failing health checks): the output is printed, then the error, and its exit code wins.
    var failure: ConsoleError?
    /// The list a table shows, as plain values, for `--format csv`; `nil` when the output is not a list.
    var records: ListRecords?

    init(json: (any Encodable)?, text: @escaping (RenderStyle) -> String) {
        self.json = json
        self.text = text
    }

    static var empty: CommandOutput { CommandOutput(json: nil) { _ in "" } }

    /// Output with one JSON object and a message line.
    static func message(_ line: String, json: (any Encodable)? = nil) -> CommandOutput {
        CommandOutput(json: json) { _ in line }
    }
}

/// How table mode should look on this output stream.
struct RenderStyle {
    var color: Bool
    /// Terminal width, or `nil` when not a terminal (no truncation).
    var width: Int?

    func bold(_ s: String) -> String { paint("1", s) }
    func dim(_ s: String) -> String { paint("2", s) }
    func green(_ s: String) -> String { paint("32", s) }
    func yellow(_ s: String) -> String { paint("33", s) }
    func red(_ s: String) -> String { paint("31", s) }
    func cyan(_ s: String) -> String { paint("36", s) }

    /// Marks the colour codes this console writes (``SafeText/mark``), so that they, and never
    /// the same codes arriving inside data, reach the terminal.
    private func paint(_ code: String, _ s: String) -> String {
        color ? SafeText.mark + "\u{1B}[\(code)m" + s + SafeText.mark + "\u{1B}[0m" : s
    }

    /// Colours a health or outcome status word.
    func status(_ s: String) -> String {
        switch s {
        case "ok", "deleted", "alreadyGone", "valid": green(s)
        case "warn", "skipped", "pending", "needsUser": yellow(s)
        case "fail", "failed": red(s)
        default: s
        }
    }
}

/// JSON in one line with stable key order.
enum JSONLine {
    static func encode(_ value: any Encodable) -> String {
        if let object = value as? any FlatJSONObject { return terminalSafe(flat(object.flatMembers)) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return terminalSafe(String(decoding: try encoder.encode(AnyEncodable(value)), as: UTF8.self))
        } catch {
            return #"{"error":{"code":"internal_error","message":"could not encode output"}}"#
        }
    }
}

extension JSONLine {
    /// The encoder escapes C0 controls but writes DEL, C1 controls and the Unicode line and
    /// direction controls raw; they can only stand inside strings, so writing them as `\uXXXX`
    /// keeps the same JSON value and keeps a terminal showing it safe.
    static func terminalSafe(_ json: String) -> String {
        // Printable ASCII holds none of them: most lines are that, and bytes are quick to scan.
        if json.allUTF8({ (0x20..<0x7F).contains($0) }) { return json }
        guard json.unicodeScalars.contains(where: UntrustedText.isControl) else { return json }
        var out = String.UnicodeScalarView()
        for scalar in json.unicodeScalars {
            if UntrustedText.isControl(scalar) {
                let hex = String(scalar.value, radix: 16, uppercase: false)
                out.append(contentsOf: ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }
}

struct AnyEncodable: Encodable {
    let value: any Encodable
    init(_ value: any Encodable) { self.value = value }
    func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}

/// A document that is one flat object of strings (a lookup's answer). Its line is written by
/// ``JSONLine/flat(_:)``, byte for byte what the encoder writes, without the encoder's dispatch
/// per value: a script prints one per line, and encoding was a tenth of a 100,000-lookup
/// script's time. A conforming type's test compares the two (`SafeTextTests.flatLookupLines`),
/// so a member added to the type and not here fails it.
protocol FlatJSONObject {
    /// The members in the encoder's sorted order; a `nil` value is left out, as the encoder
    /// leaves out an absent optional.
    var flatMembers: [(key: String, value: String?)] { get }
}

extension JSONLine {
    /// `{"key":"value",…}` with the encoder's escapes (`--format json` sets
    /// `.withoutEscapingSlashes`): `"` and `\\`, `\b \f \n \r \t`, other C0 controls as `\u00XX`.
    static func flat(_ members: [(key: String, value: String?)]) -> String {
        var out = "{"
        var first = true
        for (key, value) in members {
            guard let value else { continue }
            if !first { out += "," }
            first = false
            appendQuoted(key, to: &out)
            out += ":"
            appendQuoted(value, to: &out)
        }
        out += "}"
        return out
    }

    private static func appendQuoted(_ text: String, to out: inout String) {
        out += "\""
        // Most values need no escape: append them whole.
        if text.allUTF8({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            out += text
            out += "\""
            return
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16, uppercase: false)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
