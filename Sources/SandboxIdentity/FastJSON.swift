import BackupModel

/// A JSON parser that builds a ``JSONValue`` without `Decodable`.
///
/// `JSONDecoder` into `JSONValue` tries each type in turn and throws for every miss; under a
/// test runner that captures a backtrace per thrown error, the sandboxes' and the simulator's
/// request handling spent most of their time there. This parser throws nothing: `nil` for text
/// that is not JSON (RFC 8259; nesting bounded at 64 levels).
public enum FastJSON {
    public static func parse(_ bytes: [UInt8]) -> JSONValue? {
        var parser = Parser(bytes: bytes)
        parser.skipSpace()
        guard let value = parser.value(depth: 0) else { return nil }
        parser.skipSpace()
        return parser.index == bytes.count ? value : nil
    }

    public static func parse(_ text: String) -> JSONValue? { parse(Array(text.utf8)) }

    struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count,
                bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D
                    || bytes[index] == 0x09
            {
                index += 1
            }
        }

        mutating func literal(_ text: String, _ value: JSONValue) -> JSONValue? {
            let utf8 = Array(text.utf8)
            guard index + utf8.count <= bytes.count, Array(bytes[index..<(index + utf8.count)]) == utf8 else {
                return nil
            }
            index += utf8.count
            return value
        }

        mutating func value(depth: Int) -> JSONValue? {
            guard depth < 64, index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string().map(JSONValue.string)
            case UInt8(ascii: "t"): return literal("true", .bool(true))
            case UInt8(ascii: "f"): return literal("false", .bool(false))
            case UInt8(ascii: "n"): return literal("null", .null)
            default: return number()
            }
        }

        mutating func object(depth: Int) -> JSONValue? {
            index += 1
            var members: [String: JSONValue] = [:]
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = string() else { return nil }
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                skipSpace()
                guard let member = value(depth: depth + 1) else { return nil }
                members[key] = member
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "}") else { return nil }
                index += 1
                return .object(members)
            }
        }

        mutating func array(depth: Int) -> JSONValue? {
            index += 1
            var items: [JSONValue] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            while true {
                skipSpace()
                guard let item = value(depth: depth + 1) else { return nil }
                items.append(item)
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "]") else { return nil }
                index += 1
                return .array(items)
            }
        }

        mutating func string() -> String? {
            index += 1
            var out: [UInt8] = []
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""): return String(validating: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { return nil }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        guard var scalar = hex4() else { return nil }
                        if (0xD800..<0xDC00).contains(scalar) {
                            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                                bytes[index + 1] == UInt8(ascii: "u")
                            else { return nil }
                            index += 2
                            guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { return nil }
                        out += Array(String(Character(unicode)).utf8)
                    default: return nil
                    }
                case 0..<0x20: return nil
                default: out.append(byte)
                }
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard index + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for byte in bytes[index..<(index + 4)] {
                let nibble: UInt8
                switch byte {
                case 0x30...0x39: nibble = byte - 0x30
                case 0x41...0x46: nibble = byte - 0x41 + 10
                case 0x61...0x66: nibble = byte - 0x61 + 10
                default: return nil
                }
                value = value << 4 | UInt32(nibble)
            }
            index += 4
            return value
        }

        mutating func number() -> JSONValue? {
            let start = index
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            var integral = true
            var digits = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte >= 0x30 && byte <= 0x39 {
                    digits += 1
                } else if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
                    || byte == UInt8(ascii: "+") || (byte == UInt8(ascii: "-") && index > start)
                {
                    integral = false
                } else {
                    break
                }
                index += 1
            }
            guard digits > 0 else { return nil }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if integral, let int = Int64(text) { return .int(int) }
            return Double(text).map(JSONValue.double)
        }
    }
}
