import AsyncHTTPClient
import BackupCrypto
import BackupModel
import BackupServiceSandbox
import Foundation
import NIOCore
import NIOHTTP1
import SandboxIdentity
import Testing

/// The Backup Service sandbox over an empty export directory on a loopback port, and a client
/// that speaks every route the way the app does, for the flow tests.
final class FlowHarness: @unchecked Sendable {
    let directory: URL
    let storage: ServiceStorage
    let server: BackupServiceSandboxServer
    /// The process-wide client: nothing to shut down, so a harness that fails to start, or a
    /// test that throws before `stop()`, never leaves an `HTTPClient` to trap in its deinit.
    var client: HTTPClient { .shared }
    let random = SeededRandom(seed: 41)

    init(clock: WallClock = .system) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("flows-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        storage = try ServiceStorage(directory: directory.path)
        server = try await BackupServiceSandboxServer.start(
            BackupServiceEmulator(backend: storage, key: Array(repeating: 9, count: 32), clock: clock))
    }

    /// Runs `body` on a fresh harness and stops it, whatever `body` does.
    static func with(_ body: (FlowHarness) async throws -> Void) async throws {
        let harness = try await FlowHarness()
        do {
            try await body(harness)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    func stop() async {
        await server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    struct Reply {
        var status: Int
        var contentType: String?
        var body: [UInt8]
        var json: JSONValue? { FastJSON.parse(body) }
        var code: String? { json?["error"]?["code"]?.stringValue }
        var message: String? { json?["error"]?["message"]?.stringValue }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// One request; `json` is sent with `Content-Type: application/json` unless `contentType` says otherwise.
    func send(
        _ path: String, method: String = "POST", json: JSONValue? = nil, raw: [UInt8]? = nil,
        contentType: String? = "application/json", headers: [String: String] = [:]
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: server.baseURL + path)
        request.method = HTTPMethod(rawValue: method)
        if let contentType { request.headers.add(name: "content-type", value: contentType) }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let body = raw ?? json.map { SortedJSON.bytes($0) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await client.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 40 * 1024 * 1024)
        return Reply(
            status: Int(response.status.code), contentType: response.headers.first(name: "content-type"),
            body: Array(bytes.readableBytesView))
    }

    /// A JSON POST with a passing attestation token for exactly this body (or `token`).
    func attested(_ path: String, _ json: JSONValue, token: String? = nil, fault: String? = nil) async throws -> Reply {
        let bytes = SortedJSON.bytes(json)
        var headers = [
            SandboxAttestation.header: try token
                ?? SandboxAttestation.token(
                    method: "POST", path: path, body: bytes, now: Int64(Date().timeIntervalSince1970))
        ]
        if let fault { headers[BackupServiceEmulator.faultHeader] = fault }
        return try await send(path, raw: bytes, headers: headers)
    }

    /// A multipart POST of `payload` and `blob`.
    func form(_ path: String, payload: JSONValue?, blob: [UInt8]?, rawPayload: [UInt8]? = nil) async throws -> Reply {
        var parts: [(name: String, filename: String?, contentType: String?, bytes: [UInt8])] = []
        if let bytes = rawPayload ?? payload.map({ SortedJSON.bytes($0) }) {
            parts.append(("payload", nil, "application/json", bytes))
        }
        if let blob { parts.append(("backup", "backup", "application/octet-stream", blob)) }
        let encoded = Multipart.encode(parts, boundary: "flowtest\(random.uniform(1_000_000))")
        return try await send(path, raw: encoded.body, contentType: encoded.contentType)
    }

    /// A keypair challenge: the raw bytes and the token.
    func challenge(_ path: String, _ body: JSONValue = .object([:])) async throws -> (bytes: [UInt8], token: String) {
        let reply = try await send(path, json: body)
        try #require(reply.status == 200, "\(path): \(reply.text)")
        let json = try #require(reply.json)
        return (
            try #require(json["challenge"]?.stringValue.flatMap { Base64.decode($0, alphabet: .standard) }),
            try #require(json["token"]?.stringValue)
        )
    }

    /// A passkey challenge (creation or discoverable): the WebAuthn challenge bytes and the token.
    func passkeyChallenge(_ path: String, _ body: JSONValue? = nil) async throws -> (bytes: [UInt8], token: String) {
        let reply = try await send(path, json: body, contentType: body == nil ? nil : "application/json")
        try #require(reply.status == 200, "\(path): \(reply.text)")
        let json = try #require(reply.json)
        return (
            try #require(json["challenge"].flatMap(SandboxWebAuthn.challengeBytes)),
            try #require(json["token"]?.stringValue)
        )
    }

    // MARK: - The files of the export (the service's storage)

    func metadataFile(_ id: String) -> BackupMetadata? {
        FileManager.default.contents(atPath: directory.appendingPathComponent("\(id)/metadata").path)
            .flatMap { try? BackupMetadata.decode($0) }
    }

    func blobFile(_ id: String) -> [UInt8]? {
        FileManager.default.contents(atPath: directory.appendingPathComponent("\(id)/backup").path).map(Array.init)
    }

    /// The FactorLookup rows in `factor_lookup.jsonl`: PK → BackupId.
    func indexFile() -> [String: String] {
        guard
            let data = FileManager.default.contents(
                atPath: directory.appendingPathComponent("factor_lookup.jsonl").path)
        else { return [:] }
        var rows: [String: String] = [:]
        for line in data.split(separator: UInt8(ascii: "\n")) {
            if let row = FastJSON.parse(Array(line)), let pk = row["PK"]?.stringValue,
                let id = row["BackupId"]?.stringValue
            {
                rows[pk] = id
            }
        }
        return rows
    }
}

/// A user of the flow tests: a Root Key's Backup Account Key, a device key, and main factors.
struct FlowUser {
    let accountKey: SecretBytes
    let backupId: String
    let device: Key
    let keychain: Key
    let passkeyId: [UInt8]
    let passkeyKey: SecretBytes
    let sub: String

    struct Key {
        let secret: SecretBytes
        let uncompressed: [UInt8]
        var base64: String { Base64.encode(uncompressed) }

        init(_ random: some RandomSource) {
            secret = P256.generatePrivateKey(using: random)
            uncompressed = (try? P256.publicKey(privateKey: secret, compressed: false)) ?? []
        }

        /// `EC_KEYPAIR` signing `challenge`.
        func authorization(_ challenge: [UInt8]) throws -> JSONValue {
            .object([
                "kind": .string("EC_KEYPAIR"), "publicKey": .string(base64),
                "signature": .string(Base64.encode(try P256.sign(message: challenge, privateKey: secret))),
            ])
        }
    }

    init(_ random: some RandomSource) throws {
        accountKey = Secp256k1.generateSecretKey(using: random)
        backupId = BackupAccountID(compressedPublicKey: try Secp256k1.publicKey(secretKey: accountKey)).rawValue
        device = Key(random)
        keychain = Key(random)
        passkeyId = random.bytes(16)
        passkeyKey = P256.generatePrivateKey(using: random)
        sub = "1\(random.uniform(1_000_000_000))"
    }

    var passkeyIdText: String { Base64.encode(passkeyId, alphabet: .url, padding: false) }

    func assertion(_ challenge: [UInt8]) throws -> JSONValue {
        .object([
            "kind": .string("PASSKEY"),
            "credential": try SandboxWebAuthn.assert(
                challenge: challenge, credentialId: passkeyId, privateKey: passkeyKey),
        ])
    }

    /// An ID token for `session`, as the sign-in SDK returns it.
    func idToken(
        _ provider: OIDCProvider = .google, session: Key, iat: Int64 = Int64(Date().timeIntervalSince1970),
        aud: String? = nil, email: String? = "jane.doe@example.com"
    ) throws -> String {
        try SandboxOIDC.idToken(
            .init(
                iss: provider.issuer,
                aud: aud ?? (provider == .google ? SandboxOIDC.googleClientId : SandboxOIDC.appleAudiences[0]),
                sub: sub, email: email, iat: iat, exp: iat + 3600,
                nonce: SandboxOIDC.nonce(sessionPublicKey: session.uncompressed)), provider: provider)
    }

    /// `OIDC_ACCOUNT` with the session key's signature over `challenge`.
    func oidc(_ token: String, session: Key, challenge: [UInt8], provider: OIDCProvider = .google) throws -> JSONValue {
        .object([
            "kind": .string("OIDC_ACCOUNT"),
            "oidcToken": .object(["kind": .string(provider.rawValue), "token": .string(token)]),
            "publicKey": .string(session.base64),
            "signature": .string(Base64.encode(try P256.sign(message: challenge, privateKey: session.secret))),
        ])
    }
}

extension JSONValue {
    /// An array's element (tests read answers with it).
    subscript(index: Int) -> JSONValue? {
        guard case .array(let items) = self, items.indices.contains(index) else { return nil }
        return items[index]
    }
}
