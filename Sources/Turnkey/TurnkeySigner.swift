import BackupCrypto
import BackupModel

/// Who signs a request: a P-256 API key held here, or a stamp made elsewhere for one exact body.
///
/// The cleanup key and the tenant API key are P-256 keys in ``SecretBytes``; a break-glass
/// request is stamped by the user with their Backup Account Key (`backupctl recovery stamp`)
/// and only its stamp reaches the console, valid for the body it was made over and no other.
public enum TurnkeySigner: Sendable, CustomStringConvertible {
    /// A P-256 API key (`SIGNATURE_SCHEME_TK_API_P256`).
    case apiKey(SecretBytes)
    /// An `X-Stamp` value made over exactly the body it is sent with.
    case prestamped(String)
    /// A P-256 API key with its compressed public key computed once (``prepared(_:)``), for
    /// loops that stamp thousands of requests with one key.
    case preparedAPIKey(SecretBytes, publicKey: [UInt8])

    /// `.apiKey(key)` with its public key derived now rather than on every stamp; `self` for
    /// other signers or a key that is not a P-256 scalar (stamping then reports the error).
    public func prepared() -> TurnkeySigner {
        guard case .apiKey(let key) = self, let publicKey = try? P256.publicKey(privateKey: key, compressed: true)
        else {
            return self
        }
        return .preparedAPIKey(key, publicKey: publicKey)
    }

    /// The `X-Stamp` header for `body`, via ``TurnkeyStamp``.
    /// - Throws: ``ConsoleError`` `invalid_private_key` when the key is not a P-256 scalar.
    public func stamp(_ body: [UInt8]) throws(ConsoleError) -> String {
        switch self {
        case .apiKey(let key): try TurnkeyStamp.sign(body: body, with: P256StampSigner(privateKey: key)).headerValue
        case .prestamped(let stamp): stamp
        case .preparedAPIKey(let key, let publicKey):
            TurnkeyStamp(publicKey: publicKey, signature: try P256.sign(message: body, privateKey: key), scheme: .p256)
                .headerValue
        }
    }

    /// The signer's compressed public key as lowercase hex, when it can be known.
    public func publicKeyHex() -> String? {
        switch self {
        case .apiKey(let key): (try? P256.publicKey(privateKey: key, compressed: true)).map { Hex.encode($0) }
        case .prestamped(let stamp): (try? TurnkeyStamp(headerValue: stamp)).map { Hex.encode($0.publicKey) }
        case .preparedAPIKey(_, let publicKey): Hex.encode(publicKey)
        }
    }

    public var description: String {
        switch self {
        case .apiKey, .preparedAPIKey: "P-256 API key"
        case .prestamped: "pre-stamped request"
        }
    }
}
