import BackupCrypto
import BackupModel

/// Operator credentials: `bctl_` + base64url of 32 random bytes, stored only as SHA-256 hex.
public enum OperatorToken {
    public static let prefix = "bctl_"

    /// A fresh token; the caller shows it once and forgets it.
    public static func generate(using random: some RandomSource) -> SecretBytes {
        let raw = random.secretBytes(32)
        let text = raw.withUnsafeBytes { Base64.encode($0, alphabet: .url, padding: false) }
        return SecretBytes(Array((prefix + text).utf8))
    }

    /// The stored form of a token.
    public static func hash(_ token: SecretBytes) -> String {
        token.withUnsafeBytes { SHA256.hex($0) }
    }

    /// Reads a token as given in a file or the environment: surrounding whitespace trimmed.
    /// - Throws: `invalid_token` when it does not have the token shape.
    public static func parse(_ bytes: some Collection<UInt8>) throws(ConsoleError) -> SecretBytes {
        var trimmed = Array(bytes)
        defer { for i in trimmed.indices { trimmed[i] = 0 } }
        while let last = trimmed.last, last == 0x0a || last == 0x0d || last == 0x20 || last == 0x09 {
            trimmed.removeLast()
        }
        let start = trimmed.firstIndex { !($0 == 0x20 || $0 == 0x09) } ?? trimmed.endIndex
        let token = trimmed[start...]
        guard token.starts(with: Array(prefix.utf8)), token.count == prefix.count + 43 else {
            throw ConsoleError(
                .permissionDenied, code: "invalid_token",
                "The operator token is malformed: expected \(prefix) followed by 43 base64url characters.")
        }
        return SecretBytes(token)
    }
}
