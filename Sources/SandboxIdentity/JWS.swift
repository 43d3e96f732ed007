import BackupCrypto
import BackupModel
import Foundation

/// Compact ES256 JSON Web Signatures (RFC 7515), the form of the ID tokens and attestation
/// tokens the sandboxes stand in for.
///
/// ES256 signs `base64url(header) "." base64url(payload)` with P-256 over SHA-256 and carries
/// the signature as the raw 64 bytes `r ‖ s`, not DER; ``derToRaw(_:)`` and ``rawToDER(_:)``
/// convert between that and what OpenSSL produces and checks.
public enum JWS {
    /// A token split into its parts; nothing is verified yet.
    public struct Parsed: Sendable {
        public var header: [String: JSONValue]
        public var payload: [UInt8]
        /// `header "." payload` as sent: what the signature covers.
        public var signingInput: [UInt8]
        /// The raw `r ‖ s` signature bytes.
        public var signature: [UInt8]
    }

    /// Signs `payload` under `header` (both JSON bytes) with a P-256 key.
    /// - Throws: ``ConsoleError`` when the key is not a P-256 scalar.
    public static func sign(header: [UInt8], payload: [UInt8], privateKey: SecretBytes) throws(ConsoleError) -> String {
        let input =
            Base64.encode(header, alphabet: .url, padding: false) + "."
            + Base64.encode(payload, alphabet: .url, padding: false)
        let der = try P256.sign(message: Array(input.utf8), privateKey: privateKey)
        guard let raw = derToRaw(der) else {
            throw .internalError("OpenSSL produced a DER signature that does not parse.")
        }
        return input + "." + Base64.encode(raw, alphabet: .url, padding: false)
    }

    /// Splits a compact token; `nil` unless it is three base64url parts with a JSON object header.
    public static func parse(_ token: String) -> Parsed? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard token.utf8.count <= 16_384, parts.count == 3,
            let headerBytes = Base64.decode(parts[0], alphabet: .url),
            let payload = Base64.decode(parts[1], alphabet: .url),
            let signature = Base64.decode(parts[2], alphabet: .url),
            case .object(let header)? = FastJSON.parse(Array(headerBytes))
        else { return nil }
        return Parsed(
            header: header, payload: payload, signingInput: Array((parts[0] + "." + parts[1]).utf8),
            signature: signature)
    }

    /// Whether `parsed` is an ES256 signature by `publicKey` (SEC1, either form).
    public static func verify(_ parsed: Parsed, publicKey: [UInt8]) -> Bool {
        guard parsed.header["alg"]?.stringValue == "ES256", let der = rawToDER(parsed.signature) else { return false }
        return P256.verify(derSignature: der, message: parsed.signingInput, publicKey: publicKey) == .valid
    }

    /// DER `SEQUENCE { INTEGER r, INTEGER s }` to 64 raw bytes.
    public static func derToRaw(_ der: [UInt8]) -> [UInt8]? {
        var index = 0
        func read(_ tag: UInt8) -> [UInt8]? {
            guard index + 2 <= der.count, der[index] == tag else { return nil }
            let length = Int(der[index + 1])
            guard length < 0x80, index + 2 + length <= der.count else { return nil }
            defer { index += 2 + length }
            return Array(der[(index + 2)..<(index + 2 + length)])
        }
        guard let body = read(0x30), index == der.count else { return nil }
        var inner = 0
        func integer() -> [UInt8]? {
            guard inner + 2 <= body.count, body[inner] == 0x02 else { return nil }
            let length = Int(body[inner + 1])
            guard inner + 2 + length <= body.count else { return nil }
            defer { inner += 2 + length }
            var bytes = Array(body[(inner + 2)..<(inner + 2 + length)])
            while bytes.count > 32, bytes.first == 0 { bytes.removeFirst() }
            guard bytes.count <= 32 else { return nil }
            return [UInt8](repeating: 0, count: 32 - bytes.count) + bytes
        }
        guard let r = integer(), let s = integer(), inner == body.count else { return nil }
        return r + s
    }

    /// 64 raw bytes `r ‖ s` to strict DER.
    public static func rawToDER(_ raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64 else { return nil }
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var trimmed = Array(bytes.drop { $0 == 0 })
            if trimmed.isEmpty { trimmed = [0] }
            if trimmed[0] & 0x80 != 0 { trimmed.insert(0, at: 0) }
            return [0x02, UInt8(trimmed.count)] + trimmed
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        return [0x30, UInt8(body.count)] + body
    }

    /// Compact JSON with sorted keys, for headers and claims.
    public static func json(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? Array(encoder.encode(value))) ?? []
    }
}

/// Keys the sandboxes derive from a public label: not secrets, anyone can derive them, and they
/// unlock only the sandboxes (the stand-in issuers, attestation gateway and the like).
public enum SandboxKeys {
    /// `SHA-256("backupctl-sandbox-<label>|<n>")` for the first n that is a P-256 scalar.
    public static func p256(_ label: String) -> SecretBytes {
        var counter = 0
        while true {
            let key = SecretBytes(SHA256.hash(Array("backupctl-sandbox-\(label)|\(counter)".utf8)))
            if P256.isValidPrivateKey(key) { return key }
            counter += 1
        }
    }

    /// The uncompressed public key of ``p256(_:)``.
    public static func p256Public(_ label: String) -> [UInt8] {
        (try? P256.publicKey(privateKey: p256(label), compressed: false)) ?? []
    }
}
