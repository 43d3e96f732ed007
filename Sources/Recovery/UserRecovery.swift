import BackupCrypto
import BackupModel
import Turnkey

/// The user-side recovery operations: no store, no operator token, only the Root Key.
///
/// These run on the user's own machine (`backupctl recovery derive|sign|stamp`) or in the
/// walkthrough's present-user mode. They must match Bedrock byte for byte: the Backup Account ID
/// is the reset identity, and the signature is checked by the Backup Service (facts §3, §5).
public enum UserRecovery {
    /// Parses the Root Key JSON read from a file, a hidden prompt or stdin.
    /// - Throws: ``ConsoleError`` `invalid_root_key` naming the rule broken (empty input, not
    ///   JSON, a V1 key that is not 64 hex digits, …). The key never appears in the message.
    public static func rootKey(json: [UInt8]) throws(ConsoleError) -> RootKey {
        try RootKey(json: json)
    }

    /// The Backup Account ID of `rootKey`.
    public static func backupAccountID(rootKey: RootKey) throws(ConsoleError) -> BackupAccountID {
        try BackupAccountKey.derive(rootKey: rootKey)
    }

    /// Decodes a reset challenge as the service sends it: standard base64 (padded) of 32 bytes.
    /// - Throws: ``ConsoleError`` `invalid_challenge` saying whether the encoding or the length is wrong.
    public static func challengeBytes(base64 text: String) throws(ConsoleError) -> [UInt8] {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let bytes = Base64.decode(trimmed, alphabet: .standard, requirePadding: true) else {
            throw .invalid(
                "invalid_challenge",
                "Invalid challenge: expected standard base64 (A-Z a-z 0-9 + /, padded with =) of 32 bytes.")
        }
        guard bytes.count == 32 else {
            throw .invalid(
                "invalid_challenge", "Invalid challenge: it must decode to exactly 32 bytes, got \(bytes.count).")
        }
        return bytes
    }

    /// The /reset proof for `challenge`: standard base64 of the DER secp256k1 signature over
    /// SHA-256 of the raw challenge bytes (RFC 6979, low-S), as `POST /v1/reset` expects it.
    public static func signChallenge(_ challenge: [UInt8], rootKey: RootKey) throws(ConsoleError) -> String {
        guard challenge.count == 32 else {
            throw .invalid(
                "invalid_challenge", "Invalid challenge: it must be exactly 32 bytes, got \(challenge.count).")
        }
        return Base64.encode(try BackupAccountKey.signChallenge(challenge, rootKey: rootKey))
    }

    /// The break-glass `X-Stamp` over the exact `body` bytes, signed by the Backup Account Key
    /// under `SIGNATURE_SCHEME_TK_API_SECP256K1`.
    public static func stamp(body: [UInt8], rootKey: RootKey) throws(ConsoleError) -> TurnkeyStamp {
        try TurnkeyStamp.sign(body: body, with: Secp256k1StampSigner(rootKey: rootKey))
    }
}
