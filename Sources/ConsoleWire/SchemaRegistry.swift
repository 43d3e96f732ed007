import BackupModel
import Foundation

/// The JSON Schemas of the API's types, read from the types themselves (``SchemaProbe``) and
/// kept as named components that schemas point at with `$ref`.
///
/// Each struct gets one component, named after the type (`ShowOperation`, `BackupReport`,
/// `WhoamiOperationOutput`); primitives, arrays, dictionaries and string enums are inline.
public final class SchemaRegistry {
    /// The components by name: what `#/components/schemas/NAME` refers to.
    public private(set) var components: [String: JSONValue] = [:]
    /// Types that could not be read, with why (the schema tests require none).
    public private(set) var failures: [String: String] = [:]
    private var names: [ObjectIdentifier: String] = [:]

    public init() {}

    /// `{"$ref": "#/components/schemas/NAME"}` for `type`, registering it (and what it holds)
    /// on first use.
    public func reference<T: Decodable>(_ type: T.Type) -> JSONValue {
        (try? probe(type).schema) ?? [:]
    }

    /// The schema of `type` and a value of it (what a decoder of the probe returns).
    func probe<T: Decodable>(_ type: T.Type) throws -> (schema: JSONValue, value: T) {
        if let leaf = SchemaProbe.leaf(type) { return leaf }
        if let described = type as? any SchemaDescribed.Type {
            let name = Self.name(of: type)
            let value = try JSONDecoder().decode(T.self, from: try JSONEncoder().encode(described.schemaExample))
            if names[ObjectIdentifier(type)] == nil {
                names[ObjectIdentifier(type)] = name
                components[name] = described.jsonSchema(self)
            }
            return (Self.ref(name), value)
        }
        if let container = type as? any SchemaContainer.Type {
            let (schema, value) = try container.containerSchema(self)
            guard let value = value as? T else { throw SchemaProbe.Unreadable("a container of \(T.self)") }
            return (schema, value)
        }
        let name = Self.name(of: type)
        let decoder = SchemaProbe.Decoder(registry: self)
        let value: T
        do {
            value = try T(from: decoder)
        } catch {
            failures[name] = "\(error)"
            throw error
        }
        // A type that asked for nothing (an operation without fields) is an empty object.
        if case .unknown = decoder.node.shape { decoder.node.shape = .object(properties: [:], required: []) }
        guard let schema = decoder.node.schema else { return ([:], value) }
        if case .object = decoder.node.shape {
            if names[ObjectIdentifier(type)] == nil {
                names[ObjectIdentifier(type)] = name
                components[name] = schema
            }
            return (Self.ref(name), value)
        }
        return (schema, value)
    }

    static func ref(_ name: String) -> JSONValue { ["$ref": .string("#/components/schemas/" + name)] }

    /// `WhoamiOperation.Output` → `WhoamiOperationOutput`: the type's path without its module.
    public static func name(of type: Any.Type) -> String {
        let path = String(reflecting: type).split(separator: ".").dropFirst()
        return path.map { part in
            String(part.unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) }.map(Character.init))
        }.joined()
    }
}

extension SchemaRegistry {
    /// Adds a component built by hand (a stream's frame).
    public func add(_ name: String, _ schema: JSONValue) { components[name] = schema }

    /// `{"$ref": "#/components/schemas/NAME"}`.
    public static func reference(named name: String) -> JSONValue { ref(name) }
}
