import BackupCrypto
import BackupModel

/// Something that can stamp Turnkey requests: a key and the scheme it signs under.
public protocol TurnkeyStampSigner: Sendable {
    var scheme: TurnkeyStamp.Scheme { get }
    /// The signer's 33-byte SEC1 compressed public key.
    func compressedPublicKey() throws(ConsoleError) -> [UInt8]
    /// DER ECDSA over SHA-256 of `body`.
    func signature(over body: [UInt8]) throws(ConsoleError) -> [UInt8]
}

/// A secp256k1 key stamping under `SIGNATURE_SCHEME_TK_API_SECP256K1`: the Backup Account Key
/// acting as a sub-org's break-glass user.
///
/// libsecp256k1 signs with RFC 6979 nonces and low-S, so a stamp over a given body is
/// deterministic and equal to what Turnkey's Rust SDK (k256) produces for the same key.
public struct Secp256k1StampSigner: TurnkeyStampSigner {
    let secretKey: SecretBytes

    /// - Parameter secretKey: a 32-byte secp256k1 scalar, kept only in ``SecretBytes``.
    public init(secretKey: SecretBytes) { self.secretKey = secretKey }

    /// The Backup Account Key derived from `rootKey` (facts §3).
    /// - Throws: ``ConsoleError`` `invalid_root_key`.
    public init(rootKey: RootKey) throws(ConsoleError) {
        secretKey = try BackupAccountKey.secretKey(rootKey: rootKey)
    }

    public var scheme: TurnkeyStamp.Scheme { .secp256k1 }

    public func compressedPublicKey() throws(ConsoleError) -> [UInt8] {
        try Secp256k1.publicKey(secretKey: secretKey, compressed: true)
    }

    public func signature(over body: [UInt8]) throws(ConsoleError) -> [UInt8] {
        try Secp256k1.sign(digest: SHA256.hash(body), secretKey: secretKey)
    }
}

/// A P-256 API key stamping under `SIGNATURE_SCHEME_TK_API_P256` (tenant API key, cleanup key,
/// sync-factor keys). OpenSSL picks a random nonce, so two stamps of one body differ; both verify.
public struct P256StampSigner: TurnkeyStampSigner {
    let privateKey: SecretBytes

    /// - Parameter privateKey: a 32-byte P-256 scalar, kept only in ``SecretBytes``.
    public init(privateKey: SecretBytes) { self.privateKey = privateKey }

    public var scheme: TurnkeyStamp.Scheme { .p256 }

    public func compressedPublicKey() throws(ConsoleError) -> [UInt8] {
        try P256.publicKey(privateKey: privateKey, compressed: true)
    }

    public func signature(over body: [UInt8]) throws(ConsoleError) -> [UInt8] {
        try P256.sign(message: body, privateKey: privateKey)
    }
}
