import BackupModel
internal import CSecp256k1

/// secp256k1 keys and ECDSA through libsecp256k1: the Backup Account Key and the Turnkey
/// break-glass stamp.
///
/// libsecp256k1 rather than OpenSSL because it is what Bedrock and the Backup Service agree
/// with bit for bit: RFC 6979 nonces, low-S signatures, and strict verification that rejects
/// high-S. All calls share ``Secp256k1Context/shared``.
public enum Secp256k1 {
    /// Whether `key` is 32 bytes and, read big-endian, a scalar in `[1, n-1]`.
    public static func isValidSecretKey(_ key: SecretBytes) -> Bool {
        guard key.count == 32 else { return false }
        return withKey(key) { secp256k1_ec_seckey_verify(context, $0) } == 1
    }

    /// The SEC1 public key of `secretKey`: 33 bytes compressed (the default) or 65 uncompressed.
    ///
    /// - Throws: ``ConsoleError`` `invalid_secret_key` when the key is not a valid scalar, which
    ///   is checked first because libsecp256k1 must not be handed 0 or n.
    public static func publicKey(secretKey: SecretBytes, compressed: Bool = true) throws(ConsoleError) -> [UInt8] {
        guard isValidSecretKey(secretKey) else { throw invalidSecretKey() }
        var point = secp256k1_pubkey()
        let created = withKey(secretKey) { secp256k1_ec_pubkey_create(context, &point, $0) }
        guard created == 1 else { throw invalidSecretKey() }
        return try serialize(point, compressed: compressed)
    }

    /// Whether `bytes` is a SEC1 point on secp256k1: 33 bytes starting 02/03, or 65 starting 04.
    ///
    /// The hybrid 06/07 form, which libsecp256k1 would also parse, is refused: nothing in the
    /// backup system writes it and the Backup Service does not accept it.
    public static func isValidPublicKey(_ bytes: [UInt8]) -> Bool {
        parsePublicKey(bytes) != nil
    }

    /// A fresh secret key: 32 random bytes, drawn again in the (2^-127) case they are not a scalar.
    public static func generateSecretKey(using random: some RandomSource = SystemRandom()) -> SecretBytes {
        while true {
            let candidate = random.secretBytes(32)
            if isValidSecretKey(candidate) { return candidate }
        }
    }

    /// ECDSA over the 32-byte `digest`: RFC 6979 nonce (libsecp256k1's default), low-S, DER.
    ///
    /// Deterministic, so the same key and digest always give the same bytes, which the /reset
    /// vector pins down.
    /// - Throws: ``ConsoleError`` `invalid_digest` unless the digest is 32 bytes;
    ///   `invalid_secret_key` when the key is not a valid scalar.
    public static func sign(digest: [UInt8], secretKey: SecretBytes) throws(ConsoleError) -> [UInt8] {
        guard digest.count == 32 else {
            throw .invalid(
                "invalid_digest", "A secp256k1 signature is made over a 32-byte digest, got \(digest.count) bytes.")
        }
        guard isValidSecretKey(secretKey) else { throw invalidSecretKey() }
        var signature = secp256k1_ecdsa_signature()
        let signed = withKey(secretKey) { secp256k1_ecdsa_sign(context, &signature, digest, $0, nil, nil) }
        guard signed == 1 else { throw invalidSecretKey() }
        var der = [UInt8](repeating: 0, count: 72)
        var length = der.count
        guard secp256k1_ecdsa_signature_serialize_der(context, &der, &length, &signature) == 1 else {
            throw .internalError("libsecp256k1 could not DER-encode a signature.")
        }
        return Array(der[..<length])
    }

    /// Checks a DER signature over a 32-byte digest against a SEC1 public key.
    ///
    /// High-S signatures are reported as ``SignatureCheck/mismatch`` and deliberately not
    /// normalized: the Backup Service rejects them, so the console must too. A digest that is not
    /// 32 bytes cannot have been signed and is also a mismatch.
    public static func verify(derSignature: [UInt8], digest: [UInt8], publicKey: [UInt8]) -> SignatureCheck {
        var signature = secp256k1_ecdsa_signature()
        guard !derSignature.isEmpty,
            secp256k1_ecdsa_signature_parse_der(context, &signature, derSignature, derSignature.count) == 1
        else { return .malformedSignature }
        // libsecp256k1 reads an r or s of 0 or ≥ n as 0 and accepts the encoding; k256's
        // `Signature::from_der`, which the Backup Service uses, refuses it as malformed.
        var compact = [UInt8](repeating: 0, count: 64)
        secp256k1_ecdsa_signature_serialize_compact(context, &compact, &signature)
        guard compact[..<32].contains(where: { $0 != 0 }), compact[32...].contains(where: { $0 != 0 }) else {
            return .malformedSignature
        }
        guard var point = parsePublicKey(publicKey) else { return .malformedPublicKey }
        guard digest.count == 32 else { return .mismatch }
        return secp256k1_ecdsa_verify(context, &signature, digest, &point) == 1 ? .valid : .mismatch
    }

    /// The `invalid_secret_key` error, for callers that check ``isValidSecretKey(_:)`` themselves
    /// and want the same wording.
    public static func invalidSecretKey() -> ConsoleError {
        .invalid(
            "invalid_secret_key",
            "Invalid secp256k1 secret key: expected 32 bytes encoding a scalar between 1 and n-1.")
    }

    // MARK: - Internals

    static var context: OpaquePointer { Secp256k1Context.shared.pointer }

    /// Runs `body` with the key's bytes as the C API wants them; 0 (failure) for an empty key.
    static func withKey(_ key: SecretBytes, _ body: (UnsafePointer<UInt8>) -> Int32) -> Int32 {
        key.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress, bytes.count == 32 else { return 0 }
            return body(base.assumingMemoryBound(to: UInt8.self))
        }
    }

    static func parsePublicKey(_ bytes: [UInt8]) -> secp256k1_pubkey? {
        switch (bytes.count, bytes.first) {
        case (33, 0x02), (33, 0x03), (65, 0x04): break
        default: return nil
        }
        var point = secp256k1_pubkey()
        guard secp256k1_ec_pubkey_parse(context, &point, bytes, bytes.count) == 1 else { return nil }
        return point
    }

    static func serialize(_ point: secp256k1_pubkey, compressed: Bool) throws(ConsoleError) -> [UInt8] {
        var point = point
        var output = [UInt8](repeating: 0, count: compressed ? 33 : 65)
        var length = output.count
        let flags = UInt32(compressed ? SECP256K1_EC_COMPRESSED : SECP256K1_EC_UNCOMPRESSED)
        guard secp256k1_ec_pubkey_serialize(context, &output, &length, &point, flags) == 1,
            length == output.count
        else { throw .internalError("libsecp256k1 could not serialize a public key.") }
        return output
    }
}
