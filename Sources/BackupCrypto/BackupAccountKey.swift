import BackupModel

/// The Backup Account Key and Backup Account ID derived from a Root Key (facts §3).
///
/// This is the identity /reset proves: the ID is the compressed public key of a secp256k1 key
/// that only the holder of the Root Key can compute. Every step must match Bedrock byte for
/// byte, or a user holding the right Root Key would be told it is wrong.
public enum BackupAccountKey {
    /// libsodium `crypto_kdf` subkey id Bedrock uses for the Backup Account Key.
    static let subkeyID: UInt64 = 0x101
    /// libsodium `crypto_kdf` context Bedrock uses for the Backup Account Key.
    static let context: StaticString = "OXIDEKEY"

    /// The KDF input: the 32 key bytes for V1; SHA-256 of the UTF-8 string for V0.
    ///
    /// V0 keys are arbitrary strings, so they are hashed to a fixed-size key rather than hex-decoded.
    public static func material(of rootKey: RootKey) -> SecretBytes {
        switch rootKey.version {
        case .v1: rootKey.secret
        case .v0: SHA256.hash(secret: rootKey.secret)
        }
    }

    /// `crypto_kdf_derive_from_key(32, 0x101, "OXIDEKEY", material)`.
    ///
    /// Computed with OpenSSL's `BLAKE2BMAC` (key = material, salt = LE64(0x101) ‖ 8 zero bytes,
    /// custom = "OXIDEKEY" ‖ 8 zero bytes, size = 32, empty message).
    /// - Throws: ``ConsoleError`` `invalid_root_key` when the material is not 32 bytes;
    ///   `internal_error` if OpenSSL fails.
    public static func subkey(material: SecretBytes) throws(ConsoleError) -> SecretBytes {
        guard material.count == 32 else {
            throw .invalid(
                "invalid_root_key", "Invalid Root Key: the key material must be 32 bytes, got \(material.count).")
        }
        return try Blake2bKDF.derive(length: 32, subkeyID: subkeyID, context: context, key: material)
    }

    /// The Backup Account Key: the subkey read as a big-endian secp256k1 scalar.
    ///
    /// - Throws: ``ConsoleError`` `invalid_root_key` when the subkey is 0 or ≥ n. Bedrock fails
    ///   the same way instead of retrying with another id, so the console must not retry either.
    public static func secretKey(rootKey: RootKey) throws(ConsoleError) -> SecretBytes {
        let key = try subkey(material: material(of: rootKey))
        guard Secp256k1.isValidSecretKey(key) else {
            throw .invalid(
                "invalid_root_key",
                "Invalid Root Key: the derived Backup Account Key is not a valid secp256k1 scalar (0 or not below the curve order)."
            )
        }
        return key
    }

    /// The Backup Account ID: `backup_account_` + hex of the compressed public key.
    public static func derive(rootKey: RootKey) throws(ConsoleError) -> BackupAccountID {
        let key = try secretKey(rootKey: rootKey)
        return BackupAccountID(compressedPublicKey: try Secp256k1.publicKey(secretKey: key, compressed: true))
    }

    /// Full validation of an ID: its syntax (checked by ``BackupAccountID``) and its 33 bytes
    /// being a point on secp256k1, which the service needs to verify a /reset signature.
    /// - Throws: ``ConsoleError`` `invalid_backup_account_id`.
    public static func validate(_ id: BackupAccountID) throws(ConsoleError) {
        let bytes = id.publicKey
        guard bytes.count == 33, Secp256k1.isValidPublicKey(bytes) else {
            throw .invalid(
                "invalid_backup_account_id",
                "Invalid Backup Account ID \(id.abbreviated): its 33 bytes are not a compressed point on secp256k1.")
        }
    }

    /// The /reset proof: ECDSA with the Backup Account Key over SHA-256 of the raw challenge
    /// bytes, RFC 6979, low-S, DER (the caller base64-encodes it for the service).
    public static func signChallenge(_ challenge: [UInt8], rootKey: RootKey) throws(ConsoleError) -> [UInt8] {
        let key = try secretKey(rootKey: rootKey)
        return try Secp256k1.sign(digest: SHA256.hash(challenge), secretKey: key)
    }
}
