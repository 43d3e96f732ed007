import Foundation

/// Compact JSON with sorted keys and unescaped slashes, byte for byte what `JSONEncoder` with
/// `[.sortedKeys, .withoutEscapingSlashes]` writes, for the audit chain's hot path.
public enum CanonicalJSON {
    /// A `[String: String]` object, or `nil` when a key is not ASCII (callers then use
    /// JSONEncoder, so ordering beyond plain ASCII never has to be reproduced here).
    public static func object(_ dictionary: [String: String]) -> [UInt8]? {
        guard dictionary.keys.allSatisfy({ $0.allUTF8 { $0 < 0x80 } }) else { return nil }
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (index, key) in dictionary.keys.sorted().enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            append(string: key, to: &out)
            out.append(UInt8(ascii: ":"))
            append(string: dictionary[key] ?? "", to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// The object as a `String` (the stored `details` column), JSONEncoder's for non-ASCII keys.
    public static func objectText(_ dictionary: [String: String]) -> String {
        if let bytes = object(dictionary) { return String(decoding: bytes, as: UTF8.self) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // A [String: String] always encodes.
        return (try? encoder.encode(dictionary)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// A string literal: `"` and `\` escaped, control characters as `\b \f \n \r \t` or
    /// `\u00xx`, everything else (slashes, DEL, non-ASCII) as its UTF-8 bytes.
    public static func append(string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Runs that need no escape are copied whole (each entry's text goes through here).
        var string = string
        string.withUTF8 { bytes in
            var start = 0
            for index in 0..<bytes.count {
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                appendEscaped(byte, to: &out)
                start = index + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
        }
        out.append(UInt8(ascii: "\""))
    }

    /// `byte` (a quote, backslash or control character) as its escape.
    private static func appendEscaped(_ byte: UInt8, to out: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
        case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
        case 0x08: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
        case 0x0C: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
        case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
        case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
        case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
        case 0..<0x20:
            let digits = Array("0123456789abcdef".utf8)
            out.append(contentsOf: Array(#"\u00"#.utf8))
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        default: out.append(byte)
        }
    }

    /// A string literal, or `null`.
    public static func append(optional: String?, to out: inout [UInt8]) {
        if let optional { append(string: optional, to: &out) } else { out.append(contentsOf: Array("null".utf8)) }
    }
}
