import BackupCrypto
import BackupModel
import BackupServiceSandbox
import Foundation
import SandboxIdentity

/// What one call to the Backup Service came to, as the client sees it.
enum ServiceOutcome: Sendable {
    case ok(JSONValue)
    case refused(status: Int, code: String)
    /// No answer: the connection failed or dropped (the request may have been acted on).
    case lost

    var isTransient: Bool {
        switch self {
        case .lost: true
        case .refused(let status, _): status >= 500 || status == 429 || status == 408
        case .ok: false
        }
    }

    var code: String? {
        if case .refused(_, let code) = self { return code }
        return nil
    }
}

/// The app's Backup Service client, as Bedrock behaves: JSON bodies, the attestation token on
/// the three routes that need one, challenge fetches retried (three attempts), a consuming POST
/// never retried (its token is single use).
struct ServiceCaller: Sendable {
    let transport: any SimulationTransport
    let clock: @Sendable () -> Int64

    /// A keypair challenge: its raw bytes and token (`nil` after three failed attempts).
    func keypairChallenge(_ path: String, body: JSONValue = .object([:]), faults: [String?]) async -> (
        challenge: [UInt8], token: String
    )? {
        for attempt in 0..<3 {
            let outcome = await post(path, body: body, fault: faults.indices.contains(attempt) ? faults[attempt] : nil)
            if case .ok(let json) = outcome,
                let challenge = json["challenge"]?.stringValue.flatMap({ Base64.decode($0, alphabet: .standard) }),
                let token = json["token"]?.stringValue
            {
                return (challenge, token)
            }
            guard outcome.isTransient else { return nil }
        }
        return nil
    }

    /// A passkey challenge (creation or discoverable): the WebAuthn challenge bytes, the raw
    /// challenge JSON and the token.
    func passkeyChallenge(_ path: String, body: JSONValue?, faults: [String?]) async -> (
        challenge: [UInt8], token: String
    )? {
        for attempt in 0..<3 {
            let outcome = await post(path, body: body, fault: faults.indices.contains(attempt) ? faults[attempt] : nil)
            if case .ok(let json) = outcome, let challenge = json["challenge"].flatMap(SandboxWebAuthn.challengeBytes),
                let token = json["token"]?.stringValue
            {
                return (challenge, token)
            }
            guard outcome.isTransient else { return nil }
        }
        return nil
    }

    /// One JSON POST (no body when `body` is nil), with an attestation token when `attest`.
    func post(_ path: String, body: JSONValue?, attest: Bool = false, fault: String? = nil) async -> ServiceOutcome {
        var headers: [String: String] = [:]
        var bytes: [UInt8] = []
        if let body {
            bytes = SortedJSON.bytes(body)
            headers["content-type"] = "application/json"
        }
        if attest {
            headers[SandboxAttestation.header] = try? SandboxAttestation.token(
                method: "POST", path: path, body: bytes.isEmpty ? nil : bytes, now: clock() / 1000)
        }
        if let fault { headers[BackupServiceEmulator.faultHeader] = fault }
        return Self.outcome(await transport.backup(.init(method: "POST", path: path, headers: headers, body: bytes)))
    }

    /// A multipart POST (`/v1/create`, `/v1/sync`): `payload` JSON and the `backup` blob.
    func postForm(_ path: String, payload: JSONValue, blob: [UInt8], boundary: String, fault: String?) async
        -> ServiceOutcome
    {
        let form = Multipart.encode(
            [
                (name: "payload", filename: nil, contentType: "application/json", bytes: SortedJSON.bytes(payload)),
                (name: "backup", filename: "backup", contentType: "application/octet-stream", bytes: blob),
            ], boundary: boundary)
        var headers = ["content-type": form.contentType]
        if let fault { headers[BackupServiceEmulator.faultHeader] = fault }
        return Self.outcome(
            await transport.backup(.init(method: "POST", path: path, headers: headers, body: form.body)))
    }

    static func outcome(_ answer: ServiceAnswer?) -> ServiceOutcome {
        guard let answer else { return .lost }
        if (200..<300).contains(answer.status) {
            if answer.body.isEmpty { return .ok(.null) }
            return .ok((FastJSON.parse(Array(answer.body))) ?? .null)
        }
        let json = FastJSON.parse(Array(answer.body))
        return .refused(status: answer.status, code: json?["error"]?["code"]?.stringValue ?? "http_\(answer.status)")
    }
}

/// The `Authorization` objects a client sends.
enum Authorizations {
    /// `EC_KEYPAIR`: a P-256 key signing the raw challenge.
    static func ecKeypair(_ key: SimKey, challenge: [UInt8]) -> JSONValue {
        .object([
            "kind": .string("EC_KEYPAIR"), "publicKey": .string(key.serviceForm),
            "signature": .string(Base64.encode((try? P256.sign(message: challenge, privateKey: key.secret)) ?? [])),
        ])
    }

    /// `OIDC_ACCOUNT`: the ID token and the session key's signature over the challenge.
    static func oidc(_ provider: OIDCProvider, token: String, session: SimKey, challenge: [UInt8]) -> JSONValue {
        .object([
            "kind": .string("OIDC_ACCOUNT"),
            "oidcToken": .object(["kind": .string(provider.rawValue), "token": .string(token)]),
            "publicKey": .string(session.serviceForm),
            "signature": .string(Base64.encode((try? P256.sign(message: challenge, privateKey: session.secret)) ?? [])),
        ])
    }

    /// `PASSKEY` with an assertion (or, at registration, the registration credential).
    static func passkey(_ credential: JSONValue, label: String? = nil) -> JSONValue {
        var object: [String: JSONValue] = ["kind": .string("PASSKEY"), "credential": credential]
        if let label { object["label"] = .string(label) }
        return .object(object)
    }
}

/// A P-256 key a client holds (a device's sync key, a keychain key, an OIDC session key).
struct SimKey: Sendable {
    let secret: SecretBytes
    /// Standard base64 of the 65-byte point: how the service names the key.
    let serviceForm: String
    /// Lowercase hex of the 33-byte point: how Turnkey names the key.
    let turnkeyForm: String
    let uncompressed: [UInt8]

    init(_ random: some RandomSource) {
        secret = P256.generatePrivateKey(using: random)
        uncompressed = (try? P256.publicKey(privateKey: secret, compressed: false)) ?? []
        serviceForm = Base64.encode(uncompressed)
        turnkeyForm = Hex.encode((try? P256.publicKey(privateKey: secret, compressed: true)) ?? [])
    }
}
