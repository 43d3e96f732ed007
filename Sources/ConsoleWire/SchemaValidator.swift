import BackupModel
import Foundation

/// Checks a JSON value against a JSON Schema: the subset the API's document uses (`type`,
/// `enum`, `properties`, `required`, `additionalProperties`, `items`, `anyOf`, `oneOf`,
/// `$ref` to `#/components/schemas/…`, `minimum`, `maximum`, `minLength`, `pattern`,
/// `minProperties`, `maxProperties`). The server checks every request body with it, and the tests every answer.
public struct SchemaValidator: Sendable {
    /// The components `$ref` points at.
    public let components: [String: JSONValue]

    public init(components: [String: JSONValue]) { self.components = components }

    /// Every way `value` breaks `schema`, each as `PATH: what` (`$` is the whole value);
    /// empty when it conforms.
    public func violations(of value: JSONValue, against schema: JSONValue) -> [String] {
        var found: [String] = []
        check(value, schema, path: "$", into: &found, depth: 0)
        return found
    }

    private func check(_ value: JSONValue, _ schema: JSONValue, path: String, into found: inout [String], depth: Int) {
        guard depth < 64 else { return found.append("\(path): the schema nests too deep") }
        let rules = schema.objectValue
        if let ref = rules["$ref"]?.stringValue {
            let name = String(ref.split(separator: "/").last ?? "")
            guard let target = components[name] else { return found.append("\(path): unknown schema \(ref)") }
            return check(value, target, path: path, into: &found, depth: depth + 1)
        }
        if let options = rules["anyOf"]?.arrayValue ?? rules["oneOf"]?.arrayValue {
            let matching = options.filter { violations(of: value, against: $0).isEmpty }.count
            let exclusive = rules["oneOf"] != nil
            if matching == 0 || (exclusive && matching > 1) {
                found.append("\(path): matches \(matching) of the \(exclusive ? "oneOf" : "anyOf") alternatives")
            }
        }
        if let allowed = rules["enum"]?.arrayValue, !allowed.contains(value) {
            found.append("\(path): \(brief(value)) is not one of \(allowed.map(brief).joined(separator: ", "))")
        }
        if let type = rules["type"] {
            let types = type.stringValue.map { [$0] } ?? type.arrayValue.compactMap(\.stringValue)
            guard types.contains(where: { Self.conforms(value, to: $0) }) else {
                return found.append("\(path): expected \(types.joined(separator: " or ")), got \(brief(value))")
            }
        }
        switch value {
        case .string(let text): string(text, rules, path: path, into: &found)
        case .int(let number): bounds(Double(number), rules, path: path, into: &found)
        case .double(let number): bounds(number, rules, path: path, into: &found)
        case .array(let elements):
            if let items = rules["items"] {
                for (index, element) in elements.enumerated() {
                    check(element, items, path: "\(path)[\(index)]", into: &found, depth: depth + 1)
                }
            }
        case .object(let members):
            object(members, rules, path: path, into: &found, depth: depth)
        default: break
        }
    }

    private func object(
        _ members: [String: JSONValue], _ rules: [String: JSONValue], path: String, into found: inout [String],
        depth: Int
    ) {
        let properties = rules["properties"]?.objectValue ?? [:]
        for name in rules["required"]?.arrayValue.compactMap(\.stringValue) ?? [] where members[name] == nil {
            found.append("\(path): missing required property \(name)")
        }
        if case .int(let least)? = rules["minProperties"], members.count < least {
            found.append("\(path): needs at least \(least) properties")
        }
        if case .int(let most)? = rules["maxProperties"], members.count > most {
            found.append("\(path): allows at most \(most) properties")
        }
        for (name, member) in members.sorted(by: { $0.key < $1.key }) {
            if let property = properties[name] {
                check(member, property, path: "\(path).\(name)", into: &found, depth: depth + 1)
            } else if let extra = rules["additionalProperties"] {
                if extra == .bool(false) {
                    found.append("\(path): unexpected property \(name)")
                } else if case .object = extra {
                    check(member, extra, path: "\(path).\(name)", into: &found, depth: depth + 1)
                }
            }
        }
    }

    private func string(_ text: String, _ rules: [String: JSONValue], path: String, into found: inout [String]) {
        if case .int(let least)? = rules["minLength"], text.count < least {
            found.append("\(path): needs at least \(least) characters")
        }
        if let pattern = rules["pattern"]?.stringValue,
            text.range(of: pattern, options: .regularExpression) == nil
        {
            found.append("\(path): does not match \(pattern)")
        }
    }

    private func bounds(_ number: Double, _ rules: [String: JSONValue], path: String, into found: inout [String]) {
        if let least = rules["minimum"].flatMap(Self.number), number < least {
            found.append("\(path): \(number) is below the minimum \(least)")
        }
        if let most = rules["maximum"].flatMap(Self.number), number > most {
            found.append("\(path): \(number) is above the maximum \(most)")
        }
    }

    private static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .int(let number): Double(number)
        case .double(let number): number
        default: nil
        }
    }

    static func conforms(_ value: JSONValue, to type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object),
            ("integer", .int), ("number", .int), ("number", .double):
            true
        case ("integer", .double(let number)): number.rounded() == number
        default: false
        }
    }

    /// A short form of a value for messages: its kind, and a string's or number's start.
    private func brief(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let flag): String(flag)
        case .int(let number): String(number)
        case .double(let number): String(number)
        case .string(let text): SecretShape.quoted(text, limit: 40)
        case .array: "an array"
        case .object: "an object"
        }
    }
}
