import BackupCrypto
import BackupModel

/// The opaque reset challenge token: `rst_` + base64url (no padding) of 32 random bytes.
///
/// It is a bearer credential for 15 minutes, so it lives in ``SecretBytes``, is shown once (to
/// the operator who began the reset) and is stored only as the lowercase hex SHA-256 of its text.
/// The audit log may carry a prefix of that hash, which identifies the token without revealing it.
public enum ResetToken {
    public static let prefix = "rst_"
    static let encodedLength = 43

    /// A fresh token from `random`.
    public static func generate(using random: some RandomSource) -> SecretBytes {
        let raw = random.secretBytes(32)
        let text = raw.withUnsafeBytes { Base64.encode($0, alphabet: .url, padding: false) }
        return SecretBytes(Array((prefix + text).utf8))
    }

    /// The stored form (hex SHA-256 of the token text), after checking the token's shape.
    /// - Throws: ``ConsoleError`` `invalid_reset_token` when it is not `rst_` + 43 base64url characters.
    public static func hash(_ token: SecretBytes) throws(ConsoleError) -> String {
        let hash: String? = token.withUnsafeBytes { bytes in
            let body = bytes.dropFirst(prefix.utf8.count)
            guard bytes.starts(with: prefix.utf8), body.count == encodedLength,
                Base64.decode(String(decoding: body, as: UTF8.self), alphabet: .url)?.count == 32
            else { return nil }
            return SHA256.hex(bytes)
        }
        guard let hash else {
            throw .invalid(
                "invalid_reset_token",
                "Invalid reset token: expected \(prefix) followed by \(encodedLength) base64url characters, as printed by `reset begin`."
            )
        }
        return hash
    }

    /// The first 12 hex digits of a token hash: enough to match audit entries, useless to an attacker.
    public static func auditPrefix(ofHash hash: String) -> String { String(hash.prefix(12)) }
}
