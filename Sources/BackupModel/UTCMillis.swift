import Foundation

/// Unix milliseconds that travel as RFC 3339 UTC text with milliseconds
/// (`2026-11-25T11:46:00.123Z`): audit times, exactly the instant the hash chain covers.
@propertyWrapper
public struct UTCMillis: Sendable, Equatable, Hashable, Codable {
    public var wrappedValue: Int64

    public init(wrappedValue: Int64) { self.wrappedValue = wrappedValue }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    /// Total over `Int64` (a hostile time of `Int64.min` prints, it does not trap): floor
    /// division without the `millis - 999` that overflowed.
    public static func format(_ millis: Int64) -> String {
        let (quotient, remainder) = millis.quotientAndRemainder(dividingBy: 1000)
        let seconds = remainder < 0 ? quotient - 1 : quotient
        let digits = String(Int(remainder < 0 ? remainder + 1000 : remainder))
        return String(Timestamp.format(seconds).dropLast()) + "." + String(repeating: "0", count: 3 - digits.count)
            + digits + "Z"
    }

    /// The unix milliseconds of a ``format(_:)`` text, or `nil`.
    public static func millis(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count == 24, bytes[19] == UInt8(ascii: "."), bytes[23] == UInt8(ascii: "Z"),
            let stamp = Timestamp(rfc3339: text),
            let fraction = Int64(String(decoding: bytes[20..<23], as: UTF8.self))
        else { return nil }
        return stamp.seconds * 1000 + fraction
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        guard let millis = Self.millis(try container.decode(String.self)) else {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription: "expected an RFC 3339 time with milliseconds (2026-11-25T11:46:00.123Z)")
        }
        wrappedValue = millis
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Self.format(wrappedValue))
    }
}
