import BackupModel
import Foundation

extension WireJSON {
    /// Builds `T` from a parsed value as `JSONDecoder` (default strategies) builds it from the
    /// text: numbers convert only where exact, `Data` is base64, `URL` a string, a `Date`
    /// seconds since 2001; errors are the same `DecodingError` cases at the same coding paths
    /// (a number that does not fit its type names its path too, where `JSONDecoder`'s is empty).
    public static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try ValueDecoder(value, codingPath: []).unbox(type)
    }

    struct Index: CodingKey {
        var intValue: Int?
        var stringValue: String { "Index \(intValue ?? 0)" }
        init(intValue: Int) { self.intValue = intValue }
        init?(stringValue: String) { nil }
    }

    final class ValueDecoder: Decoder {
        let value: JSONValue
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        init(_ value: JSONValue, codingPath: [any CodingKey]) {
            self.value = value
            self.codingPath = codingPath
        }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            guard case .object(let members) = value else {
                throw mismatch([String: JSONValue].self, value, codingPath)
            }
            return KeyedDecodingContainer(Keyed<Key>(members: members, codingPath: codingPath))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            guard case .array(let items) = value else { throw mismatch([JSONValue].self, value, codingPath) }
            return Unkeyed(items: items, codingPath: codingPath)
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(decoder: self) }

        func unbox<T: Decodable>(_ type: T.Type) throws -> T {
            if let scalar = try scalar(type) { return scalar }
            if T.self == JSONValue.self, let same = value as? T { return same }
            if T.self == Data.self, let data = try data() as? T { return data }
            if T.self == URL.self, let url = try url() as? T { return url }
            return try T(from: self)
        }

        func data() throws -> Data {
            guard let data = Data(base64Encoded: try string()) else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: codingPath, debugDescription: "Encountered Data is not valid Base64."))
            }
            return data
        }

        func url() throws -> URL {
            guard let url = URL(string: try string()) else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: codingPath, debugDescription: "Invalid URL string."))
            }
            return url
        }

        /// The standard library's scalars, read without a container.
        private func scalar<T>(_ type: T.Type) throws -> T? {
            switch type {
            case is String.Type: return try string() as? T
            case is Bool.Type: return try bool() as? T
            case is Int.Type: return try integer(Int.self) as? T
            case is Int64.Type: return try integer(Int64.self) as? T
            case is Int32.Type: return try integer(Int32.self) as? T
            case is Int16.Type: return try integer(Int16.self) as? T
            case is Int8.Type: return try integer(Int8.self) as? T
            case is UInt.Type: return try integer(UInt.self) as? T
            case is UInt64.Type: return try integer(UInt64.self) as? T
            case is UInt32.Type: return try integer(UInt32.self) as? T
            case is UInt16.Type: return try integer(UInt16.self) as? T
            case is UInt8.Type: return try integer(UInt8.self) as? T
            case is Double.Type: return try double() as? T
            case is Float.Type: return try float() as? T
            default: return nil
            }
        }

        func string() throws -> String {
            guard case .string(let text) = value else { throw mismatch(String.self, value, codingPath) }
            return text
        }

        func bool() throws -> Bool {
            guard case .bool(let flag) = value else { throw mismatch(Bool.self, value, codingPath) }
            return flag
        }

        func integer<N: FixedWidthInteger>(_ type: N.Type) throws -> N {
            let converted: N?
            switch value {
            case .int(let int): converted = N(exactly: int)
            case .double(let double): converted = N(exactly: double)
            default: throw mismatch(N.self, value, codingPath)
            }
            guard let converted else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: codingPath, debugDescription: "Parsed JSON number does not fit in \(N.self)."))
            }
            return converted
        }

        func double() throws -> Double {
            switch value {
            case .int(let int): return Double(int)
            case .double(let double): return double
            default: throw mismatch(Double.self, value, codingPath)
            }
        }

        func float() throws -> Float {
            let double = try double()
            let float = Float(double)
            guard float.isFinite else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: codingPath, debugDescription: "Parsed JSON number does not fit in Float."))
            }
            return float
        }
    }

    static func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
        if value == .null {
            return .valueNotFound(
                type, .init(codingPath: path, debugDescription: "Cannot get \(type) -- found null value instead"))
        }
        let found =
            switch value {
            case .null: "null"
            case .bool: "bool"
            case .int, .double: "number"
            case .string: "a string"
            case .array: "an array"
            case .object: "a dictionary"
            }
        return .typeMismatch(
            type, .init(codingPath: path, debugDescription: "Expected to decode \(type) but found \(found) instead."))
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let members: [String: JSONValue]
        let codingPath: [any CodingKey]

        var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

        func member(_ key: Key) throws -> ValueDecoder {
            guard let value = members[key.stringValue] else {
                throw DecodingError.keyNotFound(
                    key,
                    .init(
                        codingPath: codingPath,
                        debugDescription: "No value associated with key \(key.stringValue.debugDescription)."))
            }
            return ValueDecoder(value, codingPath: codingPath + [key])
        }

        func decodeNil(forKey key: Key) throws -> Bool { try member(key).value == .null }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try member(key).unbox(type) }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            try member(key).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try member(key).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder {
            ValueDecoder(members["super"] ?? .null, codingPath: codingPath)
        }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            ValueDecoder(members[key.stringValue] ?? .null, codingPath: codingPath + [key])
        }
    }

    struct Unkeyed: UnkeyedDecodingContainer {
        let items: [JSONValue]
        let codingPath: [any CodingKey]
        var currentIndex = 0

        init(items: [JSONValue], codingPath: [any CodingKey]) {
            self.items = items
            self.codingPath = codingPath
        }

        var count: Int? { items.count }
        var isAtEnd: Bool { currentIndex >= items.count }

        mutating func next(_ type: Any.Type) throws -> ValueDecoder {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(
                    type,
                    .init(
                        codingPath: codingPath + [Index(intValue: currentIndex)],
                        debugDescription: "Unkeyed container is at end."))
            }
            defer { currentIndex += 1 }
            return ValueDecoder(items[currentIndex], codingPath: codingPath + [Index(intValue: currentIndex)])
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, items[currentIndex] == .null else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type).unbox(type) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            try next([String: JSONValue].self).container(keyedBy: type)
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            try next([JSONValue].self).unkeyedContainer()
        }

        mutating func superDecoder() throws -> any Decoder { try next(JSONValue.self) }
    }

    struct Single: SingleValueDecodingContainer {
        let decoder: ValueDecoder
        var codingPath: [any CodingKey] { decoder.codingPath }

        func decodeNil() -> Bool { decoder.value == .null }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.unbox(type) }
    }
}
