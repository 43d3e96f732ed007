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
        // Every served request parses its header's token: read in place when the bytes are
        // contiguous (a header's UTF-8), else from a copy that is wiped after.
        if let parsed = bytes.withContiguousStorageIfAvailable({ parse(contiguous: $0) }) { return try parsed.get() }
        var copy = Array(bytes)
        defer { for i in copy.indices { copy[i] = 0 } }
        return try copy.withUnsafeBufferPointer { parse(contiguous: $0) }.get()
    }

    private static func parse(contiguous bytes: UnsafeBufferPointer<UInt8>) -> Result<SecretBytes, ConsoleError> {
        var end = bytes.count
        while end > 0,
            bytes[end - 1] == 0x0a || bytes[end - 1] == 0x0d || bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09
        {
            end -= 1
        }
        var start = 0
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        let token = UnsafeBufferPointer(rebasing: bytes[start..<end])
        guard token.count == prefix.utf8.count + 43, token.starts(with: prefix.utf8) else {
            return .failure(
                ConsoleError(
                    .permissionDenied, code: "invalid_token",
                    "The operator token is malformed: expected \(prefix) followed by 43 base64url characters."))
        }
        return .success(SecretBytes(token))
    }
}
