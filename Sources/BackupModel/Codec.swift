/// Hex and base64 codecs in the exact variants the backup system uses.
///
/// Hand-written rather than Foundation's so that decoding can be strict (no whitespace, no
/// silent truncation) and so that secret bytes can be decoded straight into ``SecretBytes``.
public enum Hex {
    /// Lowercase hex.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        if let text = bytes.withContiguousStorageIfAvailable({ encode(buffer: $0) }) { return text }
        return Array(bytes).withUnsafeBufferPointer { encode(buffer: $0) }
    }

    /// Written straight into the string's storage (every audit entry and token hash is hex).
    private static func encode(buffer: UnsafeBufferPointer<UInt8>) -> String {
        String(unsafeUninitializedCapacity: buffer.count * 2) { out in
            for (i, byte) in buffer.enumerated() {
                out[2 * i] = digit(byte >> 4)
                out[2 * i + 1] = digit(byte & 0x0f)
            }
            return buffer.count * 2
        }
    }

    @inline(__always) private static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") - 10 + nibble
    }

    /// Decodes hex of either case; `nil` on odd length or a non-hex character.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let hi = nibble(utf8[i]), let lo = nibble(utf8[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    /// `String` overloads: a generic call from another module runs unspecialised, several
    /// times slower, and lookups decode every pasted key.
    public static func decode(_ text: String) -> [UInt8]? { decode(text[...]) }
    public static func isHex(_ text: String) -> Bool { text.allUTF8 { nibble($0) != nil } }

    /// Whether every character is a hex digit (either case).
    public static func isHex(_ text: some StringProtocol) -> Bool {
        text.utf8.allSatisfy { nibble($0) != nil }
    }

    @inline(__always)
    static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

public enum Base64 {
    public enum Alphabet: Sendable {
        /// RFC 4648 §4: `+` and `/`.
        case standard
        /// RFC 4648 §5: `-` and `_`.
        case url
    }

    private static let standardTable = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlTable = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func encode(
        _ bytes: some Collection<UInt8>, alphabet: Alphabet = .standard, padding: Bool = true
    ) -> String {
        let table = alphabet == .standard ? standardTable : urlTable
        let input = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity((input.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= input.count {
            let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
            out += [
                table[Int(n >> 18 & 63)], table[Int(n >> 12 & 63)], table[Int(n >> 6 & 63)],
                table[Int(n & 63)],
            ]
            i += 3
        }
        let rest = input.count - i
        if rest == 1 {
            let n = UInt32(input[i]) << 16
            out += [table[Int(n >> 18 & 63)], table[Int(n >> 12 & 63)]]
            if padding { out += Array("==".utf8) }
        } else if rest == 2 {
            let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8
            out += [table[Int(n >> 18 & 63)], table[Int(n >> 12 & 63)], table[Int(n >> 6 & 63)]]
            if padding { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Strict decode in one alphabet. Padding is accepted when correct and optional when
    /// `requirePadding` is false; any other character, or non-zero trailing bits, fails.
    public static func decode(
        _ text: some StringProtocol, alphabet: Alphabet, requirePadding: Bool = false
    ) -> [UInt8]? {
        var chars = Array(text.utf8)
        var pad = 0
        while let last = chars.last, last == UInt8(ascii: "=") {
            chars.removeLast()
            pad += 1
        }
        guard pad <= 2 else { return nil }
        if pad > 0 || requirePadding {
            guard (chars.count + pad) % 4 == 0 else { return nil }
        }
        guard chars.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        for c in chars {
            guard let v = value(c, alphabet) else { return nil }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
            }
        }
        // Trailing bits must be zero (canonical encoding).
        if bits > 0, acc & ((1 << UInt32(bits)) - 1) != 0 { return nil }
        return out
    }

    /// Whether `text` is already the unpadded encoding of its bytes in `alphabet` — exactly
    /// what `encode(decode(text, alphabet: alphabet)!, alphabet: alphabet, padding: false)`
    /// gives — and names at least one byte. Nothing is decoded or allocated: the stored form of
    /// a credential id is usually what was pasted.
    public static func isCanonicalUnpadded(_ text: String, alphabet: Alphabet) -> Bool {
        var text = text
        return text.withUTF8 { chars in
            guard !chars.isEmpty, chars.count % 4 != 1 else { return false }
            var last: UInt8 = 0
            for c in chars {
                guard let v = value(c, alphabet) else { return false }
                last = v
            }
            // The bits of the last character past the last whole byte must be zero.
            switch chars.count % 4 {
            case 2: return last & 0x0F == 0
            case 3: return last & 0x03 == 0
            default: return true
            }
        }
    }

    /// Decodes either alphabet, padded or not — the way operators paste identifiers.
    /// A `String` overload, specialised here (see `Hex.decode(_:)`).
    public static func decodeLenient(_ text: String) -> [UInt8]? { decodeLenient(text[...]) }

    public static func decodeLenient(_ text: some StringProtocol) -> [UInt8]? {
        decode(text, alphabet: .url) ?? decode(text, alphabet: .standard)
    }

    private static func value(_ c: UInt8, _ alphabet: Alphabet) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+") where alphabet == .standard: return 62
        case UInt8(ascii: "/") where alphabet == .standard: return 63
        case UInt8(ascii: "-") where alphabet == .url: return 62
        case UInt8(ascii: "_") where alphabet == .url: return 63
        default: return nil
        }
    }
}
