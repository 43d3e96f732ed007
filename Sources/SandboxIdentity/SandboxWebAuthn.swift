import BackupCrypto
import BackupModel
import Foundation

/// WebAuthn as the Backup Service and Turnkey see it, with one stand-in.
///
/// Assertions are real WebAuthn: `authenticatorData` (RP id hash, UP/UV flags, counter), a
/// `clientDataJSON` with type, challenge and origin, and an ES256 signature over
/// `authenticatorData ‖ SHA-256(clientDataJSON)` by the credential's P-256 key, checked
/// against the key stored at registration. The stand-in is the registration's
/// `attestationObject`: production sends CBOR with a COSE key (verified by webauthn-rs); the
/// sandbox sends base64url JSON `{"fmt":"none","attStmt":{},"authData","publicKey"}` carrying
/// the same facts (format `none` has no attestation signature in production either).
public enum SandboxWebAuthn {
    public static let rpId = "keys.world.app"
    public static let rpName = "World App"
    public static let origin = "https://keys.world.app"
    /// The Android app origins the service also allows (dev, then prod and staging).
    public static let androidOrigins = [
        "android:apk-key-hash:o0Fu39yqrsxeWSucqge7eOzG8xrsRAn0nKbTtN_x2-A",
        "android:apk-key-hash:nSrXEn8JkZKXFMAZW0NHhDRTHNi38YE2XCvVzYXjRu8",
    ]

    /// Why a credential was refused.
    public enum Failure: Error, Sendable, Equatable {
        /// Not the shape of a WebAuthn credential (`webauthn_invalid_payload`).
        case invalidPayload
        /// `clientExtensionResults.prf.results` present (`webauthn_prf_results_not_allowed`).
        case prfResults
        /// The ceremony failed: challenge, origin, RP id, flags or signature (`webauthn_error`).
        case ceremony
        /// No stored credential has this id (`webauthn_error`).
        case credentialNotFound
    }

    /// A passkey the sandbox stored at registration: its id and public key.
    public struct StoredCredential: Sendable, Equatable {
        /// base64url without padding.
        public var credentialId: String
        /// The 65-byte uncompressed P-256 point.
        public var publicKey: [UInt8]

        public init(credentialId: String, publicKey: [UInt8]) {
            self.credentialId = credentialId
            self.publicKey = publicKey
        }

        /// webauthn-rs's `Passkey` JSON, as the service stores it in the metadata's
        /// `webauthnCredential` (credential id at `cred.cred_id`, the COSE EC2 key's x and y).
        public var webauthnCredential: JSONValue {
            let x = Base64.encode(publicKey.dropFirst().prefix(32), alphabet: .url, padding: false)
            let y = Base64.encode(publicKey.suffix(32), alphabet: .url, padding: false)
            return .object([
                "cred": .object([
                    "cred_id": .string(credentialId),
                    "cred": .object([
                        "type_": .string("ES256"),
                        "key": .object([
                            "EC_EC2": .object(["curve": .string("SECP256R1"), "x": .string(x), "y": .string(y)])
                        ]),
                    ]),
                    "counter": .int(0), "transports": .null, "user_verified": .bool(true),
                    "backup_eligible": .bool(true), "backup_state": .bool(true),
                    "registration_policy": .string("required"), "attestation_format": .string("none"),
                ])
            ])
        }

        /// Reads a stored `webauthnCredential` back; `nil` when it is not that shape.
        public init?(webauthnCredential value: JSONValue?) {
            guard let cred = value?["cred"], let id = cred["cred_id"]?.stringValue,
                let ec2 = cred["cred"]?["key"]?["EC_EC2"], let x = ec2["x"]?.stringValue.flatMap(Self.url),
                let y = ec2["y"]?.stringValue.flatMap(Self.url), x.count == 32, y.count == 32
            else { return nil }
            self.init(credentialId: id, publicKey: [0x04] + x + y)
        }

        static func url(_ text: String) -> [UInt8]? { Base64.decode(text, alphabet: .url) }
    }

    // MARK: - Challenges (what the service sends)

    /// `CreationChallengeResponse`: what `/v1/create/challenge/passkey` returns as `challenge`.
    public static func creationChallenge(challenge: [UInt8], userId: [UInt8], name: String, displayName: String)
        -> JSONValue
    {
        .object([
            "publicKey": .object([
                "rp": .object(["id": .string(rpId), "name": .string(rpName)]),
                "user": .object([
                    "id": .string(Base64.encode(userId, alphabet: .url, padding: false)), "name": .string(name),
                    "displayName": .string(displayName),
                ]),
                "challenge": .string(Base64.encode(challenge, alphabet: .url, padding: false)),
                "pubKeyCredParams": .array([
                    .object(["type": .string("public-key"), "alg": .int(-7)]),
                    .object(["type": .string("public-key"), "alg": .int(-257)]),
                ]),
                "timeout": .int(300_000), "attestation": .string("none"),
                "authenticatorSelection": .object([
                    "residentKey": .string("required"), "requireResidentKey": .bool(true),
                    "userVerification": .string("required"),
                ]),
            ])
        ])
    }

    /// `RequestChallengeResponse` of a discoverable authentication.
    public static func requestChallenge(challenge: [UInt8]) -> JSONValue {
        .object([
            "publicKey": .object([
                "challenge": .string(Base64.encode(challenge, alphabet: .url, padding: false)),
                "timeout": .int(300_000), "rpId": .string(rpId), "allowCredentials": .array([]),
                "userVerification": .string("required"),
            ]),
            "mediation": .null,
        ])
    }

    /// The challenge bytes inside a creation or request challenge.
    public static func challengeBytes(_ challenge: JSONValue) -> [UInt8]? {
        challenge["publicKey"]?["challenge"]?.stringValue.flatMap { Base64.decode($0, alphabet: .url) }
    }

    // MARK: - The authenticator (what a client's passkey produces)

    /// A registration credential for `challenge` by the credential `id` with key `privateKey`.
    public static func register(challenge: [UInt8], credentialId: [UInt8], privateKey: SecretBytes)
        throws(ConsoleError) -> JSONValue
    {
        let publicKey = try P256.publicKey(privateKey: privateKey, compressed: false)
        let clientData = clientDataJSON(type: "webauthn.create", challenge: challenge)
        let attestation = JWS.json([
            "fmt": "none", "authData": Base64.encode(authenticatorData(attested: true), alphabet: .url, padding: false),
            "publicKey": Base64.encode(publicKey),
        ])
        let id = Base64.encode(credentialId, alphabet: .url, padding: false)
        return .object([
            "id": .string(id), "rawId": .string(id), "type": .string("public-key"),
            "response": .object([
                "attestationObject": .string(Base64.encode(attestation, alphabet: .url, padding: false)),
                "clientDataJSON": .string(Base64.encode(clientData, alphabet: .url, padding: false)),
            ]),
            "clientExtensionResults": .object([:]),
        ])
    }

    /// An assertion over `challenge` (the raw bytes the client data carries).
    public static func assert(challenge: [UInt8], credentialId: [UInt8], privateKey: SecretBytes)
        throws(ConsoleError) -> JSONValue
    {
        let parts = try assertion(challenge: challenge, privateKey: privateKey)
        let id = Base64.encode(credentialId, alphabet: .url, padding: false)
        return .object([
            "id": .string(id), "rawId": .string(id), "type": .string("public-key"),
            "response": .object([
                "authenticatorData": .string(Base64.encode(parts.authenticatorData, alphabet: .url, padding: false)),
                "clientDataJSON": .string(Base64.encode(parts.clientDataJSON, alphabet: .url, padding: false)),
                "signature": .string(Base64.encode(parts.signature, alphabet: .url, padding: false)),
                "userHandle": .null,
            ]),
            "clientExtensionResults": .object([:]),
        ])
    }

    /// The three parts of an assertion (Turnkey's WebAuthn stamp carries them separately).
    public static func assertion(challenge: [UInt8], privateKey: SecretBytes) throws(ConsoleError) -> (
        authenticatorData: [UInt8], clientDataJSON: [UInt8], signature: [UInt8]
    ) {
        let data = authenticatorData(attested: false)
        let clientData = clientDataJSON(type: "webauthn.get", challenge: challenge)
        let signature = try P256.sign(message: data + SHA256.hash(clientData), privateKey: privateKey)
        return (data, clientData, signature)
    }

    static func clientDataJSON(type: String, challenge: [UInt8]) -> [UInt8] {
        let encoded = Base64.encode(challenge, alphabet: .url, padding: false)
        return Array(#"{"type":"\#(type)","challenge":"\#(encoded)","origin":"\#(origin)","crossOrigin":false}"#.utf8)
    }

    /// RP id hash, flags UP|UV (|AT at registration), a zero counter.
    static func authenticatorData(attested: Bool) -> [UInt8] {
        SHA256.hash(Array(rpId.utf8)) + [attested ? 0x45 : 0x05, 0, 0, 0, 0]
    }

    // MARK: - The verifier (what the service and Turnkey check)

    /// Checks a registration credential against the challenge the service issued; returns the
    /// new credential.
    public static func verifyRegistration(_ credential: JSONValue, challenge: [UInt8]) -> Result<
        StoredCredential, Failure
    > {
        guard let id = credential["rawId"]?.stringValue ?? credential["id"]?.stringValue,
            let idBytes = Base64.decode(id, alphabet: .url), !idBytes.isEmpty,
            credential["type"]?.stringValue == "public-key",
            let attestationText = credential["response"]?["attestationObject"]?.stringValue,
            let clientText = credential["response"]?["clientDataJSON"]?.stringValue,
            let attestationBytes = Base64.decode(attestationText, alphabet: .url),
            let clientData = Base64.decode(clientText, alphabet: .url),
            let attestation = FastJSON.parse(Array(attestationBytes)),
            let authData = attestation["authData"]?.stringValue.flatMap({ Base64.decode($0, alphabet: .url) }),
            let keyBytes = attestation["publicKey"]?.stringValue.flatMap({ Base64.decode($0, alphabet: .standard) })
        else { return .failure(.invalidPayload) }
        guard checkClientData(clientData, type: "webauthn.create", challenge: challenge),
            checkAuthenticatorData(authData), attestation["fmt"]?.stringValue == "none", keyBytes.count == 65,
            P256.isValidPublicKey(keyBytes)
        else { return .failure(.ceremony) }
        return .success(
            StoredCredential(credentialId: Base64.encode(idBytes, alphabet: .url, padding: false), publicKey: keyBytes))
    }

    /// The credential id an assertion claims (before anything is verified), base64url unpadded,
    /// after the PRF-results check; the service looks the backup up by it.
    public static func claimedCredentialId(_ credential: JSONValue) -> Result<String, Failure> {
        if credential["clientExtensionResults"]?["prf"]?["results"] != nil { return .failure(.prfResults) }
        guard let id = credential["rawId"]?.stringValue ?? credential["id"]?.stringValue,
            let bytes = Base64.decode(id, alphabet: .url), !bytes.isEmpty,
            let response = credential["response"], response["authenticatorData"]?.stringValue != nil,
            response["clientDataJSON"]?.stringValue != nil, response["signature"]?.stringValue != nil
        else { return .failure(.invalidPayload) }
        return .success(Base64.encode(bytes, alphabet: .url, padding: false))
    }

    /// Checks an assertion against the challenge and the stored credentials it may be one of.
    public static func verifyAssertion(_ credential: JSONValue, challenge: [UInt8], stored: [StoredCredential])
        -> Result<StoredCredential, Failure>
    {
        let id: String
        switch claimedCredentialId(credential) {
        case .failure(let failure): return .failure(failure)
        case .success(let value): id = value
        }
        guard let match = stored.first(where: { $0.credentialId == id }) else { return .failure(.credentialNotFound) }
        guard let response = credential["response"],
            let data = response["authenticatorData"]?.stringValue.flatMap({ Base64.decode($0, alphabet: .url) }),
            let clientData = response["clientDataJSON"]?.stringValue.flatMap({ Base64.decode($0, alphabet: .url) }),
            let signature = response["signature"]?.stringValue.flatMap({ Base64.decode($0, alphabet: .url) })
        else { return .failure(.invalidPayload) }
        guard
            verifyParts(
                authenticatorData: data, clientDataJSON: clientData, signature: signature, challenge: challenge,
                publicKey: match.publicKey)
        else { return .failure(.ceremony) }
        return .success(match)
    }

    /// The assertion checks on separate parts (Turnkey's WebAuthn stamp, the service's
    /// add-factor activity check).
    public static func verifyParts(
        authenticatorData: [UInt8], clientDataJSON: [UInt8], signature: [UInt8], challenge: [UInt8],
        publicKey: [UInt8]
    ) -> Bool {
        checkClientData(clientDataJSON, type: "webauthn.get", challenge: challenge)
            && checkAuthenticatorData(authenticatorData)
            && P256.verify(
                derSignature: signature, message: authenticatorData + SHA256.hash(clientDataJSON), publicKey: publicKey)
                == .valid
    }

    static func checkClientData(_ bytes: [UInt8], type: String, challenge: [UInt8]) -> Bool {
        guard let data = FastJSON.parse(Array(bytes)),
            data["type"]?.stringValue == type,
            let sent = data["challenge"]?.stringValue.flatMap({ Base64.decode($0, alphabet: .url) }), sent == challenge,
            let origin = data["origin"]?.stringValue, origin == Self.origin || androidOrigins.contains(origin)
        else { return false }
        return true
    }

    static func checkAuthenticatorData(_ data: [UInt8]) -> Bool {
        data.count >= 37 && Array(data.prefix(32)) == SHA256.hash(Array(rpId.utf8)) && data[32] & 0x05 == 0x05
    }
}
