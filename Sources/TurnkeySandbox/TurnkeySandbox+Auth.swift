import BackupCrypto
import BackupModel
import Foundation
import SandboxIdentity
import Turnkey

/// Who stamped a request: an API key (`X-Stamp`) or a passkey (`X-Stamp-WebAuthn`).
enum StampSigner: Sendable {
    case apiKey(String)
    case passkey(WebAuthnStamp)

    var apiKey: String? {
        if case .apiKey(let hex) = self { return hex }
        return nil
    }
}

/// Turnkey's WebAuthn stamp: `{"authenticatorData","clientDataJson","credentialId","signature"}`
/// (base64url), a passkey assertion whose challenge is the hex SHA-256 of the body.
struct WebAuthnStamp: Sendable {
    var authenticatorData: [UInt8]
    var clientDataJSON: [UInt8]
    var credentialId: String
    var signature: [UInt8]

    init?(header: String) {
        struct Wire: Decodable {
            var authenticatorData: String
            var clientDataJson: String
            var credentialId: String
            var signature: String
        }
        guard let wire = try? JSONDecoder().decode(Wire.self, from: Data(header.utf8)),
            let data = Base64.decode(wire.authenticatorData, alphabet: .url),
            let client = Base64.decode(wire.clientDataJson, alphabet: .url),
            let id = Base64.decode(wire.credentialId, alphabet: .url),
            let signature = Base64.decode(wire.signature, alphabet: .url)
        else { return nil }
        authenticatorData = data
        clientDataJSON = client
        credentialId = Base64.encode(id, alphabet: .url, padding: false)
        self.signature = signature
    }

    /// The header value for an assertion over `body` (what a client's passkey stamper sends).
    static func header(credentialId: [UInt8], body: [UInt8], privateKey: SecretBytes) throws(ConsoleError) -> String {
        let parts = try SandboxWebAuthn.assertion(challenge: Array(SHA256.hex(body).utf8), privateKey: privateKey)
        func url(_ bytes: [UInt8]) -> String { Base64.encode(bytes, alphabet: .url, padding: false) }
        return
            #"{"authenticatorData":"\#(url(parts.authenticatorData))","clientDataJson":"\#(url(parts.clientDataJSON))","credentialId":"\#(url(credentialId))","signature":"\#(url(parts.signature))"}"#
    }
}

/// The sandbox's header names.
extension TurnkeySandbox {
    public static let webAuthnStampHeader = "X-Stamp-WebAuthn"
    public static let faultHeader = "X-Sandbox-Fault"

    /// A passkey stamp's header value for `body` (clients of the sandbox use this).
    public static func webAuthnStamp(credentialId: [UInt8], body: [UInt8], privateKey: SecretBytes)
        throws(ConsoleError) -> String
    {
        try WebAuthnStamp.header(credentialId: credentialId, body: body, privateKey: privateKey)
    }
}

extension TurnkeySandbox {
    /// The user a request acts as.
    struct Caller {
        var user: SandboxUser
        var inParent: Bool
        /// The member's id in a sub-org made by `create_sub_organization`.
        var memberId: String?
    }

    enum Resolution {
        case found(Caller)
        case notFound
        case badSignature
    }

    /// Resolves the stamp to a user of `org` (a sub-org's members first, then its default
    /// users, then the parent's users, who may read).
    func caller(org: String, signer: StampSigner, body: [UInt8]) async throws(ConsoleError) -> Resolution {
        let now = timing.clock.millis()
        if org != parentOrgId, let sub = details[org] {
            switch signer {
            case .apiKey(let hex):
                if let member = sub.member(apiKey: hex, nowMillis: now) {
                    let key = member.apiKeys.first { $0.publicKey == hex }
                    let scheme =
                        key?.curveType == "API_KEY_CURVE_SECP256K1"
                        ? TurnkeyStamp.Scheme.secp256k1.rawValue : TurnkeyStamp.Scheme.p256.rawValue
                    return .found(
                        Caller(
                            user: SandboxUser(
                                name: member.userName, publicKey: hex, scheme: scheme,
                                canDelete: sub.allows(
                                    member.userId, type: TurnkeyActivityBody.deleteSubOrganizationType)),
                            inParent: false, memberId: member.userId))
                }
                if let user = defaultSubOrgUsers.first(where: { $0.publicKey == hex }) {
                    return .found(Caller(user: user, inParent: false, memberId: nil))
                }
            case .passkey(let stamp):
                guard let (member, authenticator) = sub.member(credentialId: stamp.credentialId) else { break }
                guard let key = Base64.decode(authenticator.publicKey, alphabet: .standard),
                    SandboxWebAuthn.verifyParts(
                        authenticatorData: stamp.authenticatorData, clientDataJSON: stamp.clientDataJSON,
                        signature: stamp.signature, challenge: Array(SHA256.hex(body).utf8), publicKey: key)
                else { return .badSignature }
                return .found(
                    Caller(
                        user: SandboxUser(
                            name: member.userName, publicKey: "", scheme: "SIGNATURE_SCHEME_TK_API_WEBAUTHN",
                            canDelete: sub.allows(member.userId, type: TurnkeyActivityBody.deleteSubOrganizationType)),
                        inParent: false, memberId: member.userId))
            }
        } else if org != parentOrgId, let hex = signer.apiKey,
            let user = await users(of: org).first(where: { $0.publicKey == hex })
        {
            return .found(Caller(user: user, inParent: false, memberId: nil))
        }
        if let hex = signer.apiKey, let user = parentUsers.first(where: { $0.publicKey == hex }) {
            return .found(Caller(user: user, inParent: true, memberId: nil))
        }
        return .notFound
    }
}
