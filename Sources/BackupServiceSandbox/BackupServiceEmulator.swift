import BackupCrypto
import BackupModel
import BackupService
import Foundation

/// The Backup Service's four console routes, with the service's order of checks and its exact
/// error envelope and codes (reference: `backup-service-api.md`), over a ``ServiceBackend``.
///
/// Challenge tokens are self-contained like the service's JWE: `sbx.<payload>.<mac>`, the
/// payload (kind, context, challenge, expiry) authenticated with HMAC-SHA-256 under a key the
/// emulator is given. They are opaque to clients, live 15 minutes and are single use through
/// the backend's used-token set. The HTTP framework's own plain-text answers (400, 415, 422)
/// are reproduced too, so a client meets the same two shapes of refusal as in production.
public final class BackupServiceEmulator: Sendable {
    public static let tokenLifetimeSeconds: Int64 = 15 * 60
    public static let semver = "0.9.5"

    let backend: any ServiceBackend
    let key: [UInt8]
    let clock: WallClock
    let random: any RandomSource
    public let faults: ServiceFaults

    /// - Parameter key: the token MAC key (32 bytes or more).
    public init(
        backend: any ServiceBackend, key: [UInt8], clock: WallClock = .system,
        random: any RandomSource = SystemRandom(),
        faults: ServiceFaults = ServiceFaults()
    ) {
        self.backend = backend
        self.key = key
        self.clock = clock
        self.random = random
        self.faults = faults
    }

    /// One answer: status, content type, body; `drop` closes the connection after the work is
    /// done instead of answering (a fault).
    public struct Answer: Sendable, Equatable {
        public var status: Int
        public var contentType: String?
        public var body: [UInt8]
        public var drop = false

        static func json(_ status: Int, _ value: some Encodable) -> Answer {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return Answer(
                status: status, contentType: "application/json", body: Array((try? encoder.encode(value)) ?? Data()))
        }

        static func error(_ status: Int, _ code: String, _ message: String) -> Answer {
            json(status, BackupServiceWire.ErrorEnvelope(code: code, message: message))
        }

        /// The framework's plain-text answers.
        static func plain(_ status: Int, _ text: String) -> Answer {
            Answer(status: status, contentType: "text/plain; charset=utf-8", body: Array(text.utf8))
        }
    }

    public func handle(method: String, path: String, contentType: String?, body: [UInt8]) async -> Answer {
        if let status = faults.takeFailure(path) {
            return .error(status, "internal_server_error", "Injected failure.")
        }
        switch (method, path) {
        case ("GET", "/health"):
            return .json(200, BackupServiceWire.Health(status: "ok", semver: Self.semver, rev: nil))
        case ("POST", "/v1/backup/status"):
            return await parse(BackupServiceWire.StatusRequest.self, contentType, body) { request in
                await status(request)
            }
        case ("POST", "/v1/reset/challenge/keypair"):
            return await parse(BackupServiceWire.ChallengeRequest.self, contentType, body) { request in
                guard BackupServiceWire.isBackupAccountIdShape(request.backupAccountId) else {
                    return .plain(422, "Failed to deserialize the JSON body into the target type")
                }
                return challenge(request)
            }
        case ("POST", "/v1/reset"):
            return await parse(BackupServiceWire.ResetRequest.self, contentType, body) { request in
                guard BackupServiceWire.isBackupAccountIdShape(request.backupAccountId) else {
                    return .plain(422, "Failed to deserialize the JSON body into the target type")
                }
                if faults.takeDropBefore() { return Answer(status: 0, contentType: nil, body: [], drop: true) }
                var answer = await reset(request)
                if answer.status == 204 && faults.takeDrop() { answer.drop = true }
                return answer
            }
        default:
            return .plain(404, "")
        }
    }

    /// The framework's extraction: 415 without a JSON content type, 400 for a body that is not
    /// JSON, 422 for JSON that does not fit the type.
    private func parse<T: Decodable>(
        _ type: T.Type, _ contentType: String?, _ body: [UInt8], _ then: (T) async -> Answer
    ) async -> Answer {
        guard let contentType, contentType.lowercased().hasPrefix("application/json") else {
            return .plain(415, "Expected request with `Content-Type: application/json`")
        }
        guard (try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed])) != nil else {
            return .plain(400, "Failed to parse the request body as JSON")
        }
        guard let request = try? JSONDecoder().decode(type, from: Data(body)) else {
            return .plain(422, "Failed to deserialize the JSON body into the target type")
        }
        return await then(request)
    }

    // MARK: - Routes

    func status(_ request: BackupServiceWire.StatusRequest) async -> Answer {
        do {
            guard let metadata = try await backend.metadata(backupId: request.backupId) else {
                return .error(404, "not_found", "Backup not found")
            }
            let factors = metadata.factors.map { factor -> BackupServiceWire.StatusFactor in
                switch factor.kind {
                case .passkey: BackupServiceWire.StatusFactor(kind: "PASSKEY", accountKind: nil)
                case .oidcAccount(let o):
                    BackupServiceWire.StatusFactor(kind: "OIDC_ACCOUNT", accountKind: o.provider.rawValue)
                case .ecKeypair: BackupServiceWire.StatusFactor(kind: "EC_KEYPAIR", accountKind: nil)
                }
            }
            return .json(200, BackupServiceWire.StatusResponse(backupId: request.backupId, factors: factors))
        } catch {
            return .error(500, "internal_server_error", "Internal server error")
        }
    }

    func challenge(_ request: BackupServiceWire.ChallengeRequest) -> Answer {
        let challenge = random.bytes(32)
        let payload = TokenPayload(
            typ: "KEYPAIR", ctx: .init(kind: "RESET", backupAccountId: request.backupAccountId),
            challenge: Base64.encode(challenge), exp: clock.seconds + Self.tokenLifetimeSeconds,
            nonce: Base64.encode(random.bytes(12), alphabet: .url, padding: false))
        return .json(
            200, BackupServiceWire.ChallengeResponse(challenge: Base64.encode(challenge), token: seal(payload)))
    }

    /// `/v1/reset`, steps 2–8 of the service's order (step 1 was the framework's parse).
    func reset(_ request: BackupServiceWire.ResetRequest) async -> Answer {
        // 2. The token: authentic, of the keypair type, not expired.
        guard let payload = open(request.challengeToken), payload.exp >= clock.seconds else {
            return .error(400, "jwt_error", "Invalid or expired challenge token")
        }
        guard payload.typ == "KEYPAIR" else {
            return .error(400, "unexpected_challenge_type", "Unexpected challenge type")
        }
        // 3. The context binds this operation and this backup.
        guard payload.ctx.kind == "RESET", payload.ctx.backupAccountId == request.backupAccountId else {
            return .error(400, "invalid_challenge_context", "Invalid challenge context")
        }
        // 4. The id is a point; the signature is base64 DER and verifies over the challenge.
        guard let id = try? BackupAccountID(request.backupAccountId), Secp256k1.isValidPublicKey(id.publicKey) else {
            return .error(400, "invalid_backup_account_id", "Invalid backup account ID")
        }
        guard let der = Base64.decode(request.signature, alphabet: .standard), !der.isEmpty,
            let challenge = Base64.decode(payload.challenge, alphabet: .standard)
        else {
            return .error(400, "invalid_signature", "Invalid signature")
        }
        switch Secp256k1.verify(derSignature: der, digest: SHA256.hash(challenge), publicKey: id.publicKey) {
        case .valid: break
        case .malformedSignature: return .error(400, "invalid_signature", "Invalid signature")
        case .malformedPublicKey: return .error(400, "invalid_backup_account_id", "Invalid backup account ID")
        case .mismatch: return .error(400, "signature_verification_error", "Signature verification failed")
        }
        do {
            // 5. The backup exists (HEAD of its blob).
            guard try await backend.blobExists(backupId: request.backupAccountId) else {
                return .error(404, "not_found", "Backup not found")
            }
            // 6. Single use; 7. blob, metadata, lookup rows.
            guard
                try await backend.consume(
                    tokenHash: SHA256.hex(Array(request.challengeToken.utf8)), backupId: request.backupAccountId,
                    now: clock.seconds)
            else {
                return .error(400, "already_used", "Challenge token already used")
            }
        } catch {
            return .error(500, "internal_server_error", "Internal server error")
        }
        return Answer(status: 204, contentType: nil, body: [])
    }

    // MARK: - Tokens

    struct TokenPayload: Codable {
        struct Context: Codable {
            var kind: String
            var backupAccountId: String
        }
        var typ: String
        var ctx: Context
        var challenge: String
        var exp: Int64
        var nonce: String
    }

    func seal(_ payload: TokenPayload) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = Base64.encode(Array((try? encoder.encode(payload)) ?? Data()), alphabet: .url, padding: false)
        return "sbx." + body + "."
            + Base64.encode(HMAC.sha256(key: key, Array(body.utf8)), alphabet: .url, padding: false)
    }

    /// A token of any type, for tests of the type check.
    public func sealForTests(type: String, backupAccountId: String, expires: Int64) -> String {
        seal(
            TokenPayload(
                typ: type, ctx: .init(kind: "RESET", backupAccountId: backupAccountId),
                challenge: Base64.encode([UInt8](repeating: 0, count: 32)), exp: expires, nonce: "t"))
    }

    func open(_ token: String) -> TokenPayload? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard token.utf8.count <= 4096, parts.count == 3, parts[0] == "sbx",
            let mac = Base64.decode(parts[2], alphabet: .url),
            HMAC.equal(mac, HMAC.sha256(key: key, Array(parts[1].utf8))),
            let json = Base64.decode(parts[1], alphabet: .url)
        else { return nil }
        return try? JSONDecoder().decode(TokenPayload.self, from: Data(json))
    }
}

/// HMAC-SHA-256 (RFC 2104) over the project's SHA-256.
enum HMAC {
    static func sha256(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? SHA256.hash(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = SHA256.hash(block.map { $0 ^ 0x36 } + message)
        return SHA256.hash(block.map { $0 ^ 0x5c } + inner)
    }

    /// Constant-time comparison.
    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// Faults a test or drill turns on: failures by route (5xx), and dropping the connection
/// after a reset committed (the answer never arrives).
public final class ServiceFaults: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var failures: [String: (status: Int, count: Int)] = [:]
    private var drops = 0
    private var dropsBefore = 0

    public init() {}

    /// The next `count` calls to `route` answer `status` with `internal_server_error`.
    public func fail(_ route: String, status: Int = 500, count: Int) {
        lock.withLock { failures[route] = (status, count) }
    }

    /// The next `count` successful resets commit, then the connection drops without an answer.
    public func dropAfterReset(count: Int = 1) { lock.withLock { drops = count } }

    func takeFailure(_ route: String) -> Int? {
        lock.withLock {
            guard let entry = failures[route], entry.count > 0 else { return nil }
            failures[route] = (entry.status, entry.count - 1)
            return entry.status
        }
    }

    /// The next `count` resets are dropped before any work: the answer is lost, nothing happened.
    public func dropBeforeReset(count: Int = 1) { lock.withLock { dropsBefore = count } }

    func takeDropBefore() -> Bool {
        lock.withLock {
            guard dropsBefore > 0 else { return false }
            dropsBefore -= 1
            return true
        }
    }

    func takeDrop() -> Bool {
        lock.withLock {
            guard drops > 0 else { return false }
            drops -= 1
            return true
        }
    }
}
