import BackupModel
import Foundation

/// Reads a `Decodable` type's JSON Schema from its own `init(from:)`: a decoder that answers
/// every request with a harmless value and notes what was asked — which keys, of which types,
/// which through `decodeIfPresent` (optional) and which through `decode` (required).
///
/// The schema is therefore the type's real wire form, whether its `Codable` is synthesised or
/// written by hand, and it cannot drift from what the server decodes and encodes (encoders
/// mirror decoders here; the answer-validation test checks every answer the command tests see).
public enum SchemaProbe {
    struct Unreadable: Error, CustomStringConvertible {
        var description: String
        init(_ what: String) { description = "the probe cannot read \(what)" }
    }

    /// The integers JSON carries exactly everywhere (I-JSON, RFC 7493: ±(2^53 − 1)); past them
    /// parsers round, so the schemas, and the server that checks bodies by them, stop there.
    static let safeInteger: Int64 = (1 << 53) - 1
    static let int64: JSONValue = [
        "type": "integer", "format": "int64", "minimum": .int(-safeInteger), "maximum": .int(safeInteger),
    ]

    /// Primitives and string or integer enums, with a value of each.
    static func leaf<T>(_ type: T.Type) -> (schema: JSONValue, value: T)? {
        func pair(_ schema: JSONValue, _ value: Any) -> (JSONValue, T)? { (value as? T).map { (schema, $0) } }
        switch type {
        case is String.Type: return pair(.stringType, "")
        case is Bool.Type: return pair(.booleanType, false)
        case is Int.Type: return pair(int64, 0)
        case is Int64.Type: return pair(int64, Int64(0))
        case is Int32.Type:
            return pair(
                [
                    "type": "integer", "format": "int32", "minimum": .int(Int64(Int32.min)),
                    "maximum": .int(Int64(Int32.max)),
                ], Int32(0))
        case is UInt64.Type: return pair(["type": "integer", "minimum": 0, "maximum": .int(safeInteger)], UInt64(0))
        case is UInt32.Type:
            return pair(["type": "integer", "minimum": 0, "maximum": .int(Int64(UInt32.max))], UInt32(0))
        case is UInt8.Type: return pair(["type": "integer", "minimum": 0, "maximum": 255], UInt8(0))
        case is Double.Type: return pair(["type": "number"], 0.0)
        case is Data.Type:
            let base64 = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
            return pair(["type": "string", "contentEncoding": "base64", "pattern": .string(base64)], Data())
        default: break
        }
        guard let iterable = type as? any CaseIterable.Type else { return nil }
        let cases = allCases(iterable)
        guard let first = cases.first as? T else { return nil }
        let raw = cases.compactMap { ($0 as? any RawRepresentable)?.rawValue }
        if raw.count == cases.count, let strings = raw as? [String] {
            return (["type": "string", "enum": .array(strings.map(JSONValue.string))], first)
        }
        if raw.count == cases.count, let ints = raw as? [Int] {
            return (["type": "integer", "enum": .array(ints.map { .int(Int64($0)) })], first)
        }
        return nil
    }

    private static func allCases<C: CaseIterable>(_ type: C.Type) -> [Any] { Array(type.allCases) }

    /// What a probed value turned out to be.
    final class Node {
        enum Shape {
            case unknown
            case object(properties: [String: JSONValue], required: Set<String>)
            case schema(JSONValue)
        }
        var shape = Shape.unknown

        var schema: JSONValue? {
            switch shape {
            case .unknown: nil
            case .schema(let schema): schema
            case .object(let properties, let required):
                .object(properties, required: Array(required))
            }
        }

        /// Keys the type asked about (`contains`, `decodeNil`) before decoding: it copes
        /// with their absence, so they are optional. The concrete `decodeIfPresent` overloads
        /// of the standard library do exactly that.
        var askedAbout: Set<String> = []

        static func nullable(_ schema: JSONValue) -> JSONValue {
            if schema["anyOf"]?.arrayValue.contains(["type": "null"]) == true { return schema }
            return ["anyOf": [schema, ["type": "null"]]]
        }

        func property(_ key: String, _ schema: JSONValue, required: Bool) {
            var (properties, needed): ([String: JSONValue], Set<String>) = ([:], [])
            if case .object(let p, let r) = shape { (properties, needed) = (p, r) }
            let optional = !required || askedAbout.contains(key)
            // What may be absent may also be null: decoders read both as nil, and encoders
            // that write every key (`firstBadSeq: null`) send it.
            properties[key] = optional ? Self.nullable(schema) : schema
            if !optional { needed.insert(key) }
            shape = .object(properties: properties, required: needed)
        }
    }

    final class Decoder: Swift.Decoder {
        let registry: SchemaRegistry
        let node = Node()
        var codingPath: [any CodingKey] = []
        var userInfo: [CodingUserInfoKey: Any] = [:]

        init(registry: SchemaRegistry) { self.registry = registry }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            if case .unknown = node.shape { node.shape = .object(properties: [:], required: []) }
            return KeyedDecodingContainer(Keyed<Key>(registry: registry, node: node))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            throw Unreadable("an unkeyed container (declare the type SchemaDescribed)")
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer {
            Single(registry: registry, node: node)
        }
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let registry: SchemaRegistry
        let node: Node
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { [] }

        func contains(_ key: Key) -> Bool {
            node.askedAbout.insert(key.stringValue)
            return true
        }

        func decodeNil(forKey key: Key) throws -> Bool {
            node.askedAbout.insert(key.stringValue)
            return false
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            let (schema, value) = try registry.probe(type)
            node.property(key.stringValue, schema, required: true)
            return value
        }

        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            let (schema, value) = try registry.probe(type)
            node.property(key.stringValue, schema, required: false)
            return value
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            throw Unreadable("a nested container (declare the type SchemaDescribed)")
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw Unreadable("a nested unkeyed container (declare the type SchemaDescribed)")
        }

        func superDecoder() throws -> any Swift.Decoder { throw Unreadable("a super decoder") }
        func superDecoder(forKey key: Key) throws -> any Swift.Decoder { throw Unreadable("a super decoder") }
    }

    /// A single value: a primitive, or a type that wraps one (`TenantName`, a string enum).
    struct Single: SingleValueDecodingContainer {
        let registry: SchemaRegistry
        let node: Node
        var codingPath: [any CodingKey] { [] }

        func decodeNil() -> Bool { false }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let (schema, value) = try registry.probe(type)
            node.shape = .schema(schema)
            return value
        }
    }
}

/// Arrays, sets, dictionaries keyed by strings and optionals: their schema is their element's.
protocol SchemaContainer {
    static func containerSchema(_ registry: SchemaRegistry) throws -> (JSONValue, Any)
}

extension Array: SchemaContainer where Element: Decodable {
    static func containerSchema(_ registry: SchemaRegistry) throws -> (JSONValue, Any) {
        (["type": "array", "items": try registry.probe(Element.self).schema], [Element]())
    }
}

extension Set: SchemaContainer where Element: Decodable {
    static func containerSchema(_ registry: SchemaRegistry) throws -> (JSONValue, Any) {
        (["type": "array", "uniqueItems": true, "items": try registry.probe(Element.self).schema], Set<Element>())
    }
}

extension Dictionary: SchemaContainer where Key == String, Value: Decodable {
    static func containerSchema(_ registry: SchemaRegistry) throws -> (JSONValue, Any) {
        (["type": "object", "additionalProperties": try registry.probe(Value.self).schema], [String: Value]())
    }
}

extension Optional: SchemaContainer where Wrapped: Decodable {
    static func containerSchema(_ registry: SchemaRegistry) throws -> (JSONValue, Any) {
        let wrapped = try registry.probe(Wrapped.self).schema
        return (["anyOf": [wrapped, ["type": "null"]]], Wrapped?.none as Any)
    }
}
