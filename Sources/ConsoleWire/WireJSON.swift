import BackupModel

/// The JSON of a request body, read once: ``parse(_:)`` turns the bytes into a ``JSONValue``
/// (what the schema check reads) and ``decode(_:from:)`` builds the operation from that very
/// value, so what is checked is what runs.
///
/// The grammar is RFC 8259's and nothing more: UTF-8 only, no byte-order mark, no trailing
/// commas, and a name at most once per object (I-JSON, RFC 7493). `JSONDecoder` accepts the
/// first three and keeps the first of two equal names; a body that two readers could read two
/// ways is refused instead. Numbers read as `JSONDecoder` into ``JSONValue`` reads them: an
/// integral value within `Int64` is `.int` (`1.0` and `1e2` too), anything else `.double`,
/// and a number beyond `Double`'s range is refused.
public enum WireJSON {
    /// Why a body is not JSON: the byte it stopped at and what was wrong there, never the
    /// body's text (a body may carry a secret).
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public var offset: Int
        public var reason: String

        public init(offset: Int, reason: String) {
            self.offset = offset
            self.reason = reason
        }

        public var description: String { "\(reason) at byte \(offset)" }
    }

    /// Nesting deeper than this is refused (`JSONDecoder`'s own limit is 512).
    public static let maximumDepth = 512

    public static func parse(_ bytes: some Collection<UInt8>) throws(Failure) -> JSONValue {
        let parsed = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(Failure) in try parse(buffer) }
        }
        if let parsed { return try parsed.get() }
        return try Array(bytes).withUnsafeBufferPointer { buffer throws(Failure) in try parse(buffer) }
    }

    static func parse(_ buffer: UnsafeBufferPointer<UInt8>) throws(Failure) -> JSONValue {
        var reader = Reader(bytes: buffer)
        reader.skipSpace()
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.index == buffer.count else { throw reader.failure("text after the JSON value") }
        return value
    }

    struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        func failure(_ reason: String) -> Failure { Failure(offset: index, reason: reason) }

        var atEnd: Bool { index >= bytes.count }

        mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x0A, 0x0D, 0x09: index += 1
                default: return
                }
            }
        }

        mutating func expect(_ byte: UInt8, _ what: String) throws(Failure) {
            guard !atEnd, bytes[index] == byte else { throw failure(atEnd ? "unexpected end" : "expected \(what)") }
            index += 1
        }

        mutating func value(depth: Int) throws(Failure) -> JSONValue {
            guard !atEnd else { throw failure("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw failure("expected a value")
            }
        }

        mutating func literal(_ word: String, _ value: JSONValue) throws(Failure) -> JSONValue {
            let count = word.utf8.count
            guard bytes.count - index >= count, bytes[index..<(index + count)].elementsEqual(word.utf8) else {
                throw failure("expected a value")
            }
            index += count
            return value
        }

        mutating func object(depth: Int) throws(Failure) -> JSONValue {
            guard depth <= WireJSON.maximumDepth else { throw failure("nested too deep") }
            index += 1
            var members: [String: JSONValue] = [:]
            skipSpace()
            if !atEnd, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard !atEnd, bytes[index] == UInt8(ascii: "\"") else {
                    throw failure(atEnd ? "unexpected end" : "expected a name")
                }
                let start = index
                let name = try string()
                skipSpace()
                try expect(UInt8(ascii: ":"), "':'")
                skipSpace()
                let member = try value(depth: depth)
                guard members.updateValue(member, forKey: name) == nil else {
                    throw Failure(offset: start, reason: "a name repeated in one object")
                }
                skipSpace()
                guard !atEnd else { throw failure("unexpected end") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                try expect(UInt8(ascii: "}"), "',' or '}'")
                return .object(members)
            }
        }

        mutating func array(depth: Int) throws(Failure) -> JSONValue {
            guard depth <= WireJSON.maximumDepth else { throw failure("nested too deep") }
            index += 1
            var items: [JSONValue] = []
            skipSpace()
            if !atEnd, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            while true {
                skipSpace()
                items.append(try value(depth: depth))
                skipSpace()
                guard !atEnd else { throw failure("unexpected end") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                try expect(UInt8(ascii: "]"), "',' or ']'")
                return .array(items)
            }
        }

        /// A string from its opening quote; its UTF-8 validated whole.
        mutating func string() throws(Failure) -> String {
            index += 1
            let start = index
            // Most strings have no escape: validated straight from the body.
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    defer { index += 1 }
                    return try validated(UnsafeBufferPointer(rebasing: bytes[start..<index]), from: start)
                }
                if byte == UInt8(ascii: "\\") { break }
                guard byte >= 0x20 else { throw failure("a control character in a string") }
                index += 1
            }
            var out = Array(bytes[start..<index])
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return try out.withUnsafeBufferPointer { buffer throws(Failure) in
                        try validated(buffer, from: start)
                    }
                case UInt8(ascii: "\\"):
                    index += 1
                    guard !atEnd else { throw failure("unexpected end") }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"): try unicodeEscape(into: &out)
                    default:
                        index -= 1
                        throw failure("an unknown escape")
                    }
                case 0..<0x20: throw failure("a control character in a string")
                default:
                    out.append(byte)
                    index += 1
                }
            }
            throw failure("unexpected end")
        }

        func validated(_ utf8: UnsafeBufferPointer<UInt8>, from start: Int) throws(Failure) -> String {
            guard let text = String(validating: utf8, as: UTF8.self) else {
                throw Failure(offset: start, reason: "a string that is not UTF-8")
            }
            return text
        }

        /// `\uXXXX` after its `\u`; a UTF-16 surrogate only as a pair.
        mutating func unicodeEscape(into out: inout [UInt8]) throws(Failure) {
            var scalar = try hex4()
            if (0xDC00..<0xE000).contains(scalar) { throw failure("a lone low surrogate") }
            if (0xD800..<0xDC00).contains(scalar) {
                guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"),
                    bytes[index + 1] == UInt8(ascii: "u")
                else { throw failure("a lone high surrogate") }
                index += 2
                let low = try hex4()
                guard (0xDC00..<0xE000).contains(low) else { throw failure("a lone high surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw failure("an invalid escape") }
            out.append(contentsOf: unicode.utf8)
        }

        mutating func hex4() throws(Failure) -> UInt32 {
            guard bytes.count - index >= 4 else { throw failure("unexpected end") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let nibble: UInt8
                switch byte {
                case 0x30...0x39: nibble = byte - 0x30
                case 0x41...0x46: nibble = byte - 0x41 + 10
                case 0x61...0x66: nibble = byte - 0x61 + 10
                default: throw failure("an invalid \\u escape")
                }
                value = value << 4 | UInt32(nibble)
                index += 1
            }
            return value
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
        mutating func number() throws(Failure) -> JSONValue {
            let start = index
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard !atEnd, isDigit(bytes[index]) else { throw failure("expected a digit") }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
                if !atEnd, isDigit(bytes[index]) { throw failure("a number with a leading zero") }
            } else {
                skipDigits()
            }
            var integral = true
            if !atEnd, bytes[index] == UInt8(ascii: ".") {
                integral = false
                index += 1
                guard !atEnd, isDigit(bytes[index]) else { throw failure("expected a digit") }
                skipDigits()
            }
            if !atEnd, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                integral = false
                index += 1
                if !atEnd, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard !atEnd, isDigit(bytes[index]) else { throw failure("expected a digit") }
                skipDigits()
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            if integral, let int = Int64(text) { return .int(int) }
            guard let double = Double(text), double.isFinite else {
                throw Failure(offset: start, reason: "a number beyond the range of a double")
            }
            if let int = Int64(exactly: double) { return .int(int) }
            return .double(double)
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

        mutating func skipDigits() {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
    }
}
