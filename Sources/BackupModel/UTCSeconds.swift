import Foundation

/// Unix seconds that travel as RFC 3339 UTC text (`2026-11-25T11:46:00Z`): the one time
/// format of the JSON, YAML and CSV output and of the HTTP API, whatever the store keeps.
@propertyWrapper
public struct UTCSeconds: Sendable, Equatable, Hashable, Codable {
    public var wrappedValue: Int64

    public init(wrappedValue: Int64) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let time = Timestamp(rfc3339: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "expected an RFC 3339 time such as 2026-11-25T11:46:00Z")
        }
        wrappedValue = time.seconds
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Timestamp.format(wrappedValue))
    }
}

/// ``UTCSeconds`` that may be absent: left out of the JSON when `nil`.
@propertyWrapper
public struct OptionalUTCSeconds: Sendable, Equatable, Hashable, Codable {
    public var wrappedValue: Int64?

    public init(wrappedValue: Int64?) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try UTCSeconds(from: decoder).wrappedValue
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue {
            try container.encode(UTCSeconds(wrappedValue: wrappedValue))
        } else {
            try container.encodeNil()
        }
    }
}

extension KeyedDecodingContainer {
    /// An absent or null optional time is `nil` (synthesised decoding would require the key).
    public func decode(_ type: OptionalUTCSeconds.Type, forKey key: Key) throws -> OptionalUTCSeconds {
        try decodeIfPresent(type, forKey: key) ?? OptionalUTCSeconds(wrappedValue: nil)
    }
}

extension KeyedEncodingContainer {
    /// A `nil` optional time is left out, as synthesised encoding leaves out other optionals.
    public mutating func encode(_ value: OptionalUTCSeconds, forKey key: Key) throws {
        guard let seconds = value.wrappedValue else { return }
        try encode(UTCSeconds(wrappedValue: seconds), forKey: key)
    }
}
