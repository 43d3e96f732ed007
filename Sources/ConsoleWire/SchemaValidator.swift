import BackupModel
import Foundation

/// Checks a JSON value against a JSON Schema: the subset the API's document uses (`type`,
/// `enum`, `properties`, `required`, `additionalProperties`, `items`, `anyOf`, `oneOf`,
/// `$ref` to `#/components/schemas/…`, `minimum`, `maximum`, `minLength`, `pattern`,
/// `minProperties`, `maxProperties`). The server checks every request body with it, and the tests every answer.
///
/// A schema is compiled once (``compile(_:)``): references resolved to nodes, patterns to
/// regular expressions. A check first walks the value without a word (``CompiledSchema/accepts(_:)``,
/// stopping at the first fault); only a value that fails is walked again for its messages.
/// References, alternatives, properties and items each count as a level, and a value deeper
/// than 64 is refused: a recursive schema cannot make the walk follow a body's nesting.
public struct SchemaValidator: Sendable {
    /// The components `$ref` points at.
    public let components: [String: JSONValue]
    /// The components, compiled; a compiled schema starts from a copy of it.
    private let table: SchemaTable

    public init(components: [String: JSONValue]) {
        self.components = components
        var table = SchemaTable(components: components)
        for name in components.keys.sorted() { _ = table.reference(name) }
        self.table = table
    }

    /// `schema` (which may refer to the components) compiled for repeated checks.
    public func compile(_ schema: JSONValue) -> CompiledSchema {
        var table = table
        let root = table.compile(schema)
        return CompiledSchema(nodes: table.nodes, root: root)
    }

    /// Every way `value` breaks `schema`, each as `PATH: what` (`$` is the whole value);
    /// empty when it conforms.
    public func violations(of value: JSONValue, against schema: JSONValue) -> [String] {
        compile(schema).violations(of: value)
    }
}

/// One schema ready to check values against (``SchemaValidator/compile(_:)``).
public struct CompiledSchema: Sendable {
    fileprivate let nodes: [SchemaNode]
    fileprivate let root: Int

    /// Whether `value` conforms: no message is made, and the walk stops at the first fault.
    public func accepts(_ value: JSONValue) -> Bool { accepts(value, root, depth: 0) }

    /// Every way `value` breaks the schema, each as `PATH: what` (`$` is the whole value);
    /// empty when it conforms.
    public func violations(of value: JSONValue) -> [String] {
        guard !accepts(value) else { return [] }
        var found: [String] = []
        check(value, root, path: "$", into: &found, depth: 0)
        return found
    }

    // MARK: The silent walk

    private func accepts(_ value: JSONValue, _ index: Int, depth: Int) -> Bool {
        guard depth < 64 else { return false }
        let node = nodes[index]
        switch node.reference {
        case .none: break
        case .unknown: return false
        case .node(let target): return accepts(value, target, depth: depth + 1)
        }
        if let alternatives = node.alternatives {
            let needed = node.exclusive ? 2 : 1
            var matching = 0
            for option in alternatives where accepts(value, option, depth: depth + 1) {
                matching += 1
                if matching >= needed { break }
            }
            if matching == 0 || (node.exclusive && matching > 1) { return false }
        }
        if let allowed = node.allowed, !allowed.contains(value) { return false }
        if let types = node.types, !types.contains(where: { $0.admits(value) }) { return false }
        switch value {
        case .string(let text): return stringFaults(text, node).isEmpty
        case .int(let number): return boundsFaults(Double(number), node).isEmpty
        case .double(let number): return boundsFaults(number, node).isEmpty
        case .array(let elements):
            guard let items = node.items else { return true }
            return elements.allSatisfy { accepts($0, items, depth: depth + 1) }
        case .object(let members):
            for name in node.required where members[name] == nil { return false }
            if let least = node.minProperties, members.count < least { return false }
            if let most = node.maxProperties, members.count > most { return false }
            for (name, member) in members {
                if let property = node.properties[name] {
                    guard accepts(member, property, depth: depth + 1) else { return false }
                } else {
                    switch node.additional {
                    case .unchecked: break
                    case .forbidden: return false
                    case .schema(let extra): guard accepts(member, extra, depth: depth + 1) else { return false }
                    }
                }
            }
            return true
        default: return true
        }
    }

    // MARK: The walk that says why

    private func check(_ value: JSONValue, _ index: Int, path: String, into found: inout [String], depth: Int) {
        guard depth < 64 else { return found.append("\(path): the schema nests too deep") }
        let node = nodes[index]
        switch node.reference {
        case .none: break
        case .unknown(let ref): return found.append("\(path): unknown schema \(ref)")
        case .node(let target): return check(value, target, path: path, into: &found, depth: depth + 1)
        }
        if let alternatives = node.alternatives {
            let matching = alternatives.filter { accepts(value, $0, depth: depth + 1) }.count
            if matching == 0 || (node.exclusive && matching > 1) {
                found.append("\(path): matches \(matching) of the \(node.exclusive ? "oneOf" : "anyOf") alternatives")
            }
        }
        if let allowed = node.allowed, !allowed.contains(value) {
            found.append("\(path): \(brief(value)) is not one of \(allowed.map(brief).joined(separator: ", "))")
        }
        if let types = node.types, !types.contains(where: { $0.admits(value) }) {
            return found.append(
                "\(path): expected \(types.map(\.rawValue).joined(separator: " or ")), got \(brief(value))")
        }
        switch value {
        case .string(let text): found += stringFaults(text, node).map { "\(path): \($0)" }
        case .int(let number): found += boundsFaults(Double(number), node).map { "\(path): \($0)" }
        case .double(let number): found += boundsFaults(number, node).map { "\(path): \($0)" }
        case .array(let elements):
            if let items = node.items {
                for (position, element) in elements.enumerated() {
                    check(element, items, path: "\(path)[\(position)]", into: &found, depth: depth + 1)
                }
            }
        case .object(let members):
            object(members, node, path: path, into: &found, depth: depth)
        default: break
        }
    }

    private func object(
        _ members: [String: JSONValue], _ node: SchemaNode, path: String, into found: inout [String], depth: Int
    ) {
        for name in node.required where members[name] == nil {
            found.append("\(path): missing required property \(name)")
        }
        if let least = node.minProperties, members.count < least {
            found.append("\(path): needs at least \(least) properties")
        }
        if let most = node.maxProperties, members.count > most {
            found.append("\(path): allows at most \(most) properties")
        }
        for (name, member) in members.sorted(by: { $0.key < $1.key }) {
            if let property = node.properties[name] {
                check(member, property, path: "\(path).\(name)", into: &found, depth: depth + 1)
            } else {
                switch node.additional {
                case .unchecked: break
                case .forbidden: found.append("\(path): unexpected property \(name)")
                case .schema(let extra): check(member, extra, path: "\(path).\(name)", into: &found, depth: depth + 1)
                }
            }
        }
    }

    // MARK: Strings and numbers

    private func stringFaults(_ text: String, _ node: SchemaNode) -> [String] {
        var faults: [String] = []
        if let least = node.minLength, text.count < least { faults.append("needs at least \(least) characters") }
        if let pattern = node.pattern, !pattern.matches(text) { faults.append("does not match \(pattern.source)") }
        return faults
    }

    private func boundsFaults(_ number: Double, _ node: SchemaNode) -> [String] {
        var faults: [String] = []
        if let least = node.minimum, number < least { faults.append("\(number) is below the minimum \(least)") }
        if let most = node.maximum, number > most { faults.append("\(number) is above the maximum \(most)") }
        return faults
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

/// The nodes of compiled schemas: each schema object once, each component once however often
/// it is referred to (so a recursive component is a cycle of indices, not an endless tree).
private struct SchemaTable: Sendable {
    let components: [String: JSONValue]
    var nodes: [SchemaNode] = []
    var byComponent: [String: Int] = [:]

    init(components: [String: JSONValue]) { self.components = components }

    /// The node of component `name`, compiled on first use.
    mutating func reference(_ name: String) -> Int? {
        if let known = byComponent[name] { return known }
        guard let schema = components[name] else { return nil }
        let index = nodes.count
        nodes.append(SchemaNode())
        byComponent[name] = index
        nodes[index] = node(of: schema)
        return index
    }

    /// A node for `schema`; its index.
    mutating func compile(_ schema: JSONValue) -> Int {
        let made = node(of: schema)
        nodes.append(made)
        return nodes.count - 1
    }

    private mutating func node(of schema: JSONValue) -> SchemaNode {
        let rules = schema.objectValue
        var node = SchemaNode()
        if let ref = rules["$ref"]?.stringValue {
            let name = String(ref.split(separator: "/").last ?? "")
            node.reference = reference(name).map { .node($0) } ?? .unknown(ref)
            return node
        }
        if let options = rules["anyOf"]?.arrayValue ?? rules["oneOf"]?.arrayValue {
            node.alternatives = options.map { compile($0) }
            node.exclusive = rules["oneOf"] != nil
        }
        node.allowed = rules["enum"]?.arrayValue
        if let type = rules["type"] {
            let names = type.stringValue.map { [$0] } ?? type.arrayValue.compactMap(\.stringValue)
            node.types = names.map { JSONType(rawValue: $0) ?? .unknown($0) }
        }
        node.items = rules["items"].map { compile($0) }
        node.properties = (rules["properties"]?.objectValue ?? [:]).mapValues { compile($0) }
        node.required = rules["required"]?.arrayValue.compactMap(\.stringValue) ?? []
        if case .int(let least)? = rules["minProperties"] { node.minProperties = Int(least) }
        if case .int(let most)? = rules["maxProperties"] { node.maxProperties = Int(most) }
        if let extra = rules["additionalProperties"] {
            if extra == .bool(false) {
                node.additional = .forbidden
            } else if case .object = extra {
                node.additional = .schema(compile(extra))
            }
        }
        if case .int(let least)? = rules["minLength"] { node.minLength = Int(least) }
        node.pattern = rules["pattern"]?.stringValue.map(SchemaPattern.init)
        node.minimum = rules["minimum"].flatMap(Self.number)
        node.maximum = rules["maximum"].flatMap(Self.number)
        return node
    }

    private static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .int(let number): Double(number)
        case .double(let number): number
        default: nil
        }
    }
}

private struct SchemaNode: Sendable {
    enum Reference: Sendable {
        case none
        case unknown(String)
        case node(Int)
    }

    enum Additional: Sendable {
        case unchecked
        case forbidden
        case schema(Int)
    }

    var reference = Reference.none
    /// `anyOf` (or `oneOf`, then ``exclusive``).
    var alternatives: [Int]?
    var exclusive = false
    var allowed: [JSONValue]?
    var types: [JSONType]?
    var items: Int?
    var properties: [String: Int] = [:]
    var required: [String] = []
    var minProperties: Int?
    var maxProperties: Int?
    var additional = Additional.unchecked
    var minLength: Int?
    var pattern: SchemaPattern?
    var minimum: Double?
    var maximum: Double?
}

/// A `type` of JSON Schema; one the validator does not know admits nothing.
private enum JSONType: Sendable {
    case null, boolean, string, array, object, integer, number
    case unknown(String)

    init?(rawValue: String) {
        switch rawValue {
        case "null": self = .null
        case "boolean": self = .boolean
        case "string": self = .string
        case "array": self = .array
        case "object": self = .object
        case "integer": self = .integer
        case "number": self = .number
        default: return nil
        }
    }

    var rawValue: String {
        switch self {
        case .null: "null"
        case .boolean: "boolean"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        case .integer: "integer"
        case .number: "number"
        case .unknown(let name): name
        }
    }

    func admits(_ value: JSONValue) -> Bool {
        switch (self, value) {
        case (.null, .null), (.boolean, .bool), (.string, .string), (.array, .array), (.object, .object),
            (.integer, .int), (.number, .int), (.number, .double):
            true
        case (.integer, .double(let number)): number.rounded() == number
        default: false
        }
    }
}

/// A `pattern`, compiled once. A pattern ICU cannot compile matches nothing, as
/// `String.range(of:options: .regularExpression)` found nothing for it.
private struct SchemaPattern: @unchecked Sendable {
    // NSRegularExpression is immutable once made and documented as safe to share across threads.
    let source: String
    let expression: NSRegularExpression?

    init(_ source: String) {
        self.source = source
        expression = try? NSRegularExpression(pattern: source)
    }

    func matches(_ text: String) -> Bool {
        guard let expression else { return false }
        let range = NSRange(text.startIndex..<text.endIndex, in: text)
        return expression.firstMatch(in: text, range: range) != nil
    }
}
