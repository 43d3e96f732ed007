import BackupModel
import Foundation

/// The rows of a command whose table is a list, as plain values: what `--format csv` writes.
struct ListRecords {
    var columns: [String]
    var rows: [[String]]

    init(_ columns: [String], _ rows: [[String]]) {
        self.columns = columns
        self.rows = rows
    }
}

/// A command whose table is a list: it sets ``CommandOutput/records``, so `--format csv` fits it.
protocol ListsRecords {}

enum ListsRecordsNames {
    static let all = "backups list, check, tenant list, operator list, audit list, context list"
}

/// `--format yaml` and `--format csv`: the same values as JSON mode, for people and spreadsheets.
enum StructuredOutput {
    /// The JSON document as YAML (block style, keys in the JSON's sorted order, strings quoted
    /// whenever YAML could read them as something else).
    static func yaml(_ value: any Encodable) -> String {
        let line = JSONLine.encode(value)
        guard let tree = try? JSONDecoder().decode(JSONValue.self, from: Data(line.utf8)) else { return "" }
        return yamlLines(tree, indent: 0).joined(separator: "\n")
    }

    private static func yamlLines(_ value: JSONValue, indent: Int) -> [String] {
        let pad = String(repeating: " ", count: indent)
        switch value {
        case .object(let object) where !object.isEmpty:
            return object.keys.sorted().flatMap { key -> [String] in
                let child = object[key] ?? .null
                if let scalar = scalar(child) { return [pad + quoted(key) + ": " + scalar] }
                return [pad + quoted(key) + ":"] + yamlLines(child, indent: indent + 2)
            }
        case .array(let array) where !array.isEmpty:
            return array.flatMap { item -> [String] in
                if let scalar = scalar(item) { return [pad + "- " + scalar] }
                var lines = yamlLines(item, indent: indent + 2)
                if let first = lines.first { lines[0] = pad + "- " + first.dropFirst(indent + 2) }
                return lines
            }
        default:
            return [pad + (scalar(value) ?? "null")]
        }
    }

    /// A one-line YAML scalar, or `nil` for a non-empty container.
    private static func scalar(_ value: JSONValue) -> String? {
        switch value {
        case .null: "null"
        case .bool(let b): b ? "true" : "false"
        case .int(let i): String(i)
        case .double(let d): String(d)
        case .string(let s): quoted(s)
        case .object(let o): o.isEmpty ? "{}" : nil
        case .array(let a): a.isEmpty ? "[]" : nil
        }
    }

    /// Plain when YAML reads it back as the same string, else double-quoted with JSON escapes.
    private static func quoted(_ text: String) -> String {
        let reserved = ["", "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n"]
        let plainSafe =
            !reserved.contains(text.lowercased()) && Double(text) == nil
            && text.unicodeScalars.allSatisfy {
                $0.properties.isAlphabetic || "0123456789_-./@".unicodeScalars.contains($0)
            }
            && !(text.first.map { "-.@".contains($0) } ?? true)
        if plainSafe { return text }
        let json = JSONLine.encode(text)
        return json.hasPrefix("\"") ? json : "\"\""
    }

    /// RFC 4180: a header line, then one line per row; fields quoted when they hold a comma,
    /// quote or line break, and a leading `= + - @` is prefixed with `'` so a spreadsheet does
    /// not run it as a formula.
    static func csv(_ records: ListRecords) -> String {
        ([records.columns] + records.rows).map { $0.map(field).joined(separator: ",") }.joined(separator: "\n")
    }

    /// Control characters are escaped as in every other format (`\u{1B}`, `\n`): a stored
    /// string cannot draw on the terminal or break a row.
    private static func field(_ text: String) -> String {
        var value = UntrustedText.escaped(text)
        if let first = value.first, "=+@".contains(first) || (first == "-" && Double(value) == nil) {
            value = "'" + value
        }
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
