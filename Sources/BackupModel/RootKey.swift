/// The user's Root Key in its JSON form (`{"version":"V1","key":"<64 hex>"}` or the legacy
/// `{"version":"V0","key":"<any string>"}`), as Bedrock writes it.
///
/// The key is held only in ``SecretBytes``: V1 as the 32 decoded bytes, V0 as the UTF-8 bytes of
/// the string (its derivation material is SHA-256 of those bytes, computed in BackupCrypto).
/// Parsing reads the JSON bytes directly so the key never passes through a `String`.
public struct RootKey: Sendable, CustomStringConvertible {
    public enum Version: String, Sendable {
        case v1 = "V1"
        case v0 = "V0"
    }

    public let version: Version
    /// V1: the 32 key bytes. V0: the UTF-8 bytes of the key string.
    public let secret: SecretBytes

    public init(version: Version, secret: SecretBytes) {
        self.version = version
        self.secret = secret
    }

    public var description: String { "RootKey(\(version.rawValue), <redacted>)" }

    /// Parses the JSON form.
    /// - Throws: ``ConsoleError`` with code `invalid_root_key` naming the rule that was broken.
    public init(json: some Collection<UInt8>) throws(ConsoleError) {
        var input = Array(json)
        defer { wipe(&input) }
        // Tolerate surrounding whitespace (files end in a newline; prompts may add spaces).
        let fields = try RootKeyJSONScanner.scan(input)
        guard let versionRange = fields.version else {
            throw Self.invalid("the \"version\" field is missing")
        }
        guard var keyBytes = fields.key else { throw Self.invalid("the \"key\" field is missing") }
        defer { wipe(&keyBytes) }
        let versionText = String(decoding: input[versionRange], as: UTF8.self)
        switch versionText {
        case "V1":
            guard keyBytes.count == 64 else {
                throw Self.invalid(
                    "a V1 key must be exactly 64 hex characters (32 bytes), got \(keyBytes.count) characters"
                )
            }
            guard keyBytes.allSatisfy({ Hex.nibble($0) != nil }) else {
                throw Self.invalid("a V1 key must be hex (0-9, a-f), found another character")
            }
            secret = SecretBytes(count: 32) { out in
                for i in 0..<32 {
                    // Both nibbles were checked above.
                    let hi = Hex.nibble(keyBytes[2 * i]) ?? 0
                    let lo = Hex.nibble(keyBytes[2 * i + 1]) ?? 0
                    out[i] = hi << 4 | lo
                }
            }
            version = .v1
        case "V0":
            guard !keyBytes.isEmpty else { throw Self.invalid("a V0 key must not be empty") }
            secret = SecretBytes(keyBytes)
            version = .v0
        default:
            // Repeated only when it looks like a version: with the fields swapped it would be part
            // of the key.
            let shown = versionText.count <= 4 && versionText.dropFirst().allSatisfy(\.isNumber)
            throw Self.invalid("\"version\" must be \"V1\" or \"V0\"" + (shown ? ", got \"\(versionText)\"" : ""))
        }
    }

    static func invalid(_ reason: String) -> ConsoleError {
        .invalid("invalid_root_key", "Invalid Root Key: \(reason).")
    }
}

@inline(never)
func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { buffer in
        for i in buffer.indices { buffer[i] = 0 }
    }
}

/// A minimal JSON object scanner for exactly the Root Key shape: one object with string
/// members; `version` and `key` are extracted, other members are skipped. Escapes in `key`
/// are decoded into a byte array the caller wipes.
enum RootKeyJSONScanner {
    struct Fields {
        var version: Range<Int>?
        var key: [UInt8]?
    }

    static func scan(_ s: [UInt8]) throws(ConsoleError) -> Fields {
        var i = 0
        func skipSpace() {
            while i < s.count, [0x20, 0x09, 0x0a, 0x0d].contains(s[i]) { i += 1 }
        }
        skipSpace()
        guard i < s.count else { throw RootKey.invalid("the input is empty") }
        guard s[i] == UInt8(ascii: "{") else {
            throw RootKey.invalid("expected a JSON object like {\"version\":\"V1\",\"key\":\"…\"}")
        }
        i += 1
        var fields = Fields()
        skipSpace()
        if i < s.count, s[i] == UInt8(ascii: "}") {
            i += 1
        } else {
            while true {
                skipSpace()
                let name = try string(s, &i)
                defer {
                    var n = name.bytes
                    wipe(&n)
                }
                skipSpace()
                guard i < s.count, s[i] == UInt8(ascii: ":") else {
                    throw RootKey.invalid("malformed JSON: expected ':'")
                }
                i += 1
                skipSpace()
                let valueStart = i
                let value = try string(s, &i)
                switch String(decoding: name.bytes, as: UTF8.self) {
                case "version": fields.version = (valueStart + 1)..<(i - 1)
                case "key":
                    if var old = fields.key { wipe(&old) }
                    fields.key = value.bytes
                default:
                    var v = value.bytes
                    wipe(&v)
                }
                skipSpace()
                guard i < s.count else { throw RootKey.invalid("malformed JSON: unterminated object") }
                if s[i] == UInt8(ascii: ",") {
                    i += 1
                    continue
                }
                guard s[i] == UInt8(ascii: "}") else {
                    throw RootKey.invalid("malformed JSON: expected ',' or '}'")
                }
                i += 1
                break
            }
        }
        skipSpace()
        guard i == s.count else { throw RootKey.invalid("unexpected data after the JSON object") }
        return fields
    }

    struct Decoded { var bytes: [UInt8] }

    /// Reads a JSON string starting at `s[i] == '"'`; leaves `i` after the closing quote.
    static func string(_ s: [UInt8], _ i: inout Int) throws(ConsoleError) -> Decoded {
        guard i < s.count, s[i] == UInt8(ascii: "\"") else {
            throw RootKey.invalid("malformed JSON: expected a string")
        }
        i += 1
        var out: [UInt8] = []
        while i < s.count {
            let c = s[i]
            if c == UInt8(ascii: "\"") {
                i += 1
                return Decoded(bytes: out)
            }
            if c == UInt8(ascii: "\\") {
                guard i + 1 < s.count else { break }
                let e = s[i + 1]
                i += 2
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "n"): out.append(0x0a)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "r"): out.append(0x0d)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0c)
                case UInt8(ascii: "u"):
                    guard i + 4 <= s.count, let hex = Hex.decode(String(decoding: s[i..<i + 4], as: UTF8.self))
                    else { throw RootKey.invalid("malformed JSON: bad \\u escape") }
                    i += 4
                    let scalar = UInt32(hex[0]) << 8 | UInt32(hex[1])
                    guard let u = Unicode.Scalar(scalar) else {
                        throw RootKey.invalid("malformed JSON: surrogate escapes are not supported")
                    }
                    out += Array(String(Character(u)).utf8)
                default: throw RootKey.invalid("malformed JSON: bad escape")
                }
                continue
            }
            guard c >= 0x20 else { throw RootKey.invalid("malformed JSON: control character in a string") }
            out.append(c)
            i += 1
        }
        wipe(&out)
        throw RootKey.invalid("malformed JSON: unterminated string")
    }
}
