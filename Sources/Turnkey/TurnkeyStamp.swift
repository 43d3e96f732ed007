import BackupCrypto
import BackupModel
import Foundation

/// A Turnkey `X-Stamp` header: who signed a request body, how, and the signature (facts §6).
///
/// The header value is base64url without padding of the compact JSON
/// `{"publicKey":"<hex33>","signature":"<hex DER>","scheme":"SIGNATURE_SCHEME_TK_API_…"}`. The
/// members are written in that order with no spaces, which is what Turnkey's Rust SDK
/// (`tkhq_api_key_stamper`, the one SDK with both schemes) serializes; Turnkey parses the JSON,
/// so the order only matters for byte-identical output, which tests and golden files rely on.
/// The signature is ECDSA over SHA-256 of the exact body bytes, so a stamp is valid for one body.
public struct TurnkeyStamp: Sendable, Equatable {
    /// The signature schemes Turnkey accepts for API-key stamps.
    public enum Scheme: String, Sendable, CaseIterable {
        /// The Backup Account Key acting as the sub-org's break-glass user.
        case secp256k1 = "SIGNATURE_SCHEME_TK_API_SECP256K1"
        /// API keys: the tenant's key, the cleanup key, sync-factor keys.
        case p256 = "SIGNATURE_SCHEME_TK_API_P256"
    }

    /// The 33-byte SEC1 compressed public key of the signer.
    public let publicKey: [UInt8]
    /// The DER-encoded ECDSA signature.
    public let signature: [UInt8]
    public let scheme: Scheme

    public init(publicKey: [UInt8], signature: [UInt8], scheme: Scheme) {
        self.publicKey = publicKey
        self.signature = signature
        self.scheme = scheme
    }

    /// Stamps `body` with `signer`.
    /// - Throws: ``ConsoleError`` from the signer (an invalid key).
    public static func sign(body: some Collection<UInt8>, with signer: some TurnkeyStampSigner) throws(ConsoleError)
        -> TurnkeyStamp
    {
        let bytes = Array(body)
        return TurnkeyStamp(
            publicKey: try signer.compressedPublicKey(), signature: try signer.signature(over: bytes),
            scheme: signer.scheme)
    }

    /// The stamp's JSON document, exactly as it is base64url-encoded into the header.
    public var jsonBytes: [UInt8] {
        Array(
            #"{"publicKey":"\#(Hex.encode(publicKey))","signature":"\#(Hex.encode(signature))","scheme":"\#(scheme.rawValue)"}"#
                .utf8)
    }

    /// The `X-Stamp` header value.
    public var headerValue: String { Base64.encode(jsonBytes, alphabet: .url, padding: false) }

    /// Parses an `X-Stamp` header value (base64url, with or without padding).
    /// - Throws: ``ConsoleError`` `invalid_stamp` naming what is wrong.
    public init(headerValue: String) throws(ConsoleError) {
        let trimmed = headerValue.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let json = Base64.decode(trimmed, alphabet: .url) else {
            throw Self.invalid("it is not base64url")
        }
        struct Wire: Decodable {
            var publicKey: String
            var signature: String
            var scheme: String
        }
        guard let wire = try? JSONDecoder().decode(Wire.self, from: Data(json)) else {
            throw Self.invalid("it does not decode to {\"publicKey\", \"signature\", \"scheme\"} strings")
        }
        guard let scheme = Scheme(rawValue: wire.scheme) else {
            throw Self.invalid("unknown scheme \"\(wire.scheme.prefix(48))\"")
        }
        guard let key = Hex.decode(wire.publicKey), key.count == 33 else {
            throw Self.invalid("publicKey must be 66 hex digits (a 33-byte compressed key)")
        }
        guard let signature = Hex.decode(wire.signature), !signature.isEmpty else {
            throw Self.invalid("signature must be hex of a DER signature")
        }
        self.init(publicKey: key, signature: signature, scheme: scheme)
    }

    /// Checks the signature over `body` with the stamp's own key and scheme.
    public func verify(body: some Collection<UInt8>) -> SignatureCheck {
        let bytes = Array(body)
        switch scheme {
        case .secp256k1:
            return Secp256k1.verify(derSignature: signature, digest: SHA256.hash(bytes), publicKey: publicKey)
        case .p256:
            return P256.verify(derSignature: signature, message: bytes, publicKey: publicKey)
        }
    }

    static func invalid(_ reason: String) -> ConsoleError {
        .invalid("invalid_stamp", "Invalid X-Stamp value: \(reason).")
    }
}
