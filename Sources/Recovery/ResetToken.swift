import BackupCrypto
import BackupModel

/// The Backup Service's reset challenge token, opaque to the console.
///
/// The real service's token is an encrypted JWE; the sandbox's is an authenticated
/// `sbx.…` string. Either way it is a bearer credential for 15 minutes, so it lives in
/// ``SecretBytes``, is shown once (to the operator who began the reset) and is stored only as
/// the lowercase hex SHA-256 of its text — the key the service itself tracks single use under.
/// The audit log may carry a prefix of that hash, which identifies the token without revealing it.
public enum ResetToken {
    /// Longer than any token the service issues, short enough to bound what is hashed and stored.
    public static let maxLength = 4096

    /// The stored form (hex SHA-256 of the token text), after checking the token is one printable word.
    /// - Throws: ``ConsoleError`` `invalid_reset_token` when it is empty, too long, or holds
    ///   whitespace or control characters.
    public static func hash(_ token: SecretBytes) throws(ConsoleError) -> String {
        let hash: String? = token.withUnsafeBytes { bytes in
            guard (1...maxLength).contains(bytes.count), bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                return nil
            }
            return SHA256.hex(bytes)
        }
        guard let hash else {
            throw .invalid(
                "invalid_reset_token",
                "Invalid reset token: expected the one printable word `reset begin` printed (at most \(maxLength) characters)."
            )
        }
        return hash
    }

    /// The first 12 hex digits of a token hash: enough to match audit entries, useless to an attacker.
    public static func auditPrefix(ofHash hash: String) -> String { String(hash.prefix(12)) }
}
