import BackupModel
internal import COpenSSL

/// NIST P-256 keys and ECDSA through OpenSSL 3: Turnkey API keys and the sync-factor keys
/// that stamp `SIGNATURE_SCHEME_TK_API_P256` requests.
///
/// Signing and verifying go through `EVP_PKEY` (built with `EVP_PKEY_fromdata`), scalar and
/// point checks through ``P256Curve``; nothing deprecated in OpenSSL 3 is used.
public enum P256 {
    /// Whether `key` is a 32-byte big-endian scalar in `[1, n-1]`.
    public static func isValidPrivateKey(_ key: SecretBytes) -> Bool {
        guard let curve = try? P256Curve(), let scalar = curve.scalar(key) else { return false }
        BN_clear_free(scalar)
        return true
    }

    /// A fresh private key: 32 random bytes, drawn again in the (2^-32) case they are not a scalar.
    public static func generatePrivateKey(using random: some RandomSource = SystemRandom()) -> SecretBytes {
        while true {
            let candidate = random.secretBytes(32)
            if isValidPrivateKey(candidate) { return candidate }
        }
    }

    /// The SEC1 public key of `privateKey`: 33 bytes compressed or 65 uncompressed.
    /// - Throws: ``ConsoleError`` `invalid_private_key` when the key is not a scalar in `[1, n-1]`.
    public static func publicKey(privateKey: SecretBytes, compressed: Bool) throws(ConsoleError) -> [UInt8] {
        let curve = try P256Curve()
        guard let scalar = curve.scalar(privateKey) else { throw invalidPrivateKey() }
        defer { BN_clear_free(scalar) }
        let point = try curve.publicPoint(scalar)
        defer { EC_POINT_free(point) }
        return try curve.encode(point, compressed: compressed)
    }

    /// Whether `bytes` is a SEC1 point on P-256: 33 bytes starting 02/03 or 65 starting 04.
    public static func isValidPublicKey(_ bytes: [UInt8]) -> Bool {
        guard let curve = try? P256Curve(secure: false), let point = curve.point(bytes) else { return false }
        EC_POINT_free(point)
        return true
    }

    /// The 33-byte compressed form of a 33- or 65-byte public key (Turnkey stamps carry this form).
    /// - Throws: ``ConsoleError`` `invalid_public_key` when the bytes are not a point on P-256.
    public static func compress(_ publicKey: [UInt8]) throws(ConsoleError) -> [UInt8] {
        try P256Curve(secure: false).convert(publicKey, compressed: true)
    }

    /// The 65-byte `04 ‖ X ‖ Y` form of a 33- or 65-byte public key (the metadata carries this form).
    /// - Throws: ``ConsoleError`` `invalid_public_key` when the bytes are not a point on P-256.
    public static func decompress(_ publicKey: [UInt8]) throws(ConsoleError) -> [UInt8] {
        try P256Curve(secure: false).convert(publicKey, compressed: false)
    }

    /// ECDSA P-256 over SHA-256(`message`), DER-encoded, with OpenSSL's random nonce.
    ///
    /// The hash is part of the operation because Turnkey stamps sign the body bytes themselves.
    /// - Throws: ``ConsoleError`` `invalid_private_key`, or `internal_error` if OpenSSL fails.
    public static func sign(message: [UInt8], privateKey: SecretBytes) throws(ConsoleError) -> [UInt8] {
        let curve = try P256Curve()
        guard let scalar = curve.scalar(privateKey) else { throw invalidPrivateKey() }
        defer { BN_clear_free(scalar) }
        let point = try curve.publicPoint(scalar)
        defer { EC_POINT_free(point) }
        let publicKey = try curve.encode(point, compressed: false)
        let key = try P256KeyBuilder.keyPair(scalar: scalar, publicKey: publicKey)
        defer { EVP_PKEY_free(key) }

        guard let context = EVP_MD_CTX_new() else { throw OpenSSLSupport.failure("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit_ex(context, nil, "SHA256", nil, nil, key, nil) == 1 else {
            throw OpenSSLSupport.failure("EVP_DigestSignInit_ex")
        }
        // OpenSSL wants a non-null pointer even for an empty message; the count stays 0.
        let padded = message.isEmpty ? [0] : message
        var length = 0
        guard EVP_DigestSign(context, nil, &length, padded, message.count) == 1, length > 0 else {
            throw OpenSSLSupport.failure("EVP_DigestSign (size)")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, padded, message.count) == 1 else {
            throw OpenSSLSupport.failure("EVP_DigestSign")
        }
        return Array(signature[..<length])
    }

    /// Checks a DER signature over SHA-256(`message`) against a SEC1 public key.
    ///
    /// The DER must be strict (it re-encodes to the same bytes), as OpenSSL's own ECDSA verify
    /// demands; anything else is ``SignatureCheck/malformedSignature``, not a mismatch.
    public static func verify(derSignature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> SignatureCheck {
        guard P256KeyBuilder.isStrictDER(derSignature) else { return .malformedSignature }
        guard let curve = try? P256Curve(secure: false), let point = curve.point(publicKey) else {
            return .malformedPublicKey
        }
        defer { EC_POINT_free(point) }
        guard let uncompressed = try? curve.encode(point, compressed: false),
            let key = try? P256KeyBuilder.publicKey(uncompressed)
        else { return .malformedPublicKey }
        defer { EVP_PKEY_free(key) }

        guard let context = EVP_MD_CTX_new() else { return .mismatch }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit_ex(context, nil, "SHA256", nil, nil, key, nil) == 1 else {
            ERR_clear_error()
            return .mismatch
        }
        let padded = message.isEmpty ? [0] : message
        let rc = EVP_DigestVerify(context, derSignature, derSignature.count, padded, message.count)
        ERR_clear_error()
        return rc == 1 ? .valid : .mismatch
    }

    /// The `invalid_private_key` error, for callers that check ``isValidPrivateKey(_:)`` themselves
    /// (key files) and want the same wording.
    public static func invalidPrivateKey() -> ConsoleError {
        .invalid(
            "invalid_private_key",
            "Invalid P-256 private key: expected 32 bytes encoding a scalar between 1 and n-1.")
    }
}
