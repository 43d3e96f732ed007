import BackupCrypto
import BackupModel
import BackupService
import Foundation
import SandboxIdentity
import Synchronization

/// The Backup Service (crate 0.9.5), every route of `reference/backup-service-flows.md`, with
/// its order of checks, its error codes and statuses word for word, and its storage effects,
/// over a ``ServiceStorage`` (S3, FactorLookup, Redis in memory, optionally written through to an
/// export directory).
///
/// Stand-ins, where the sandbox cannot verify what production verifies, each with the real
/// shape and rules (see their types): challenge tokens (HMAC instead of a KMS-wrapped JWE,
/// ``ChallengeTokens``), passkey attestation (``SandboxWebAuthn``), Google and Apple ID tokens
/// (``SandboxOIDC``), attestation-gateway tokens (``SandboxAttestation``). The HTTP framework's
/// own plain-text answers (400, 413, 415, 422) are reproduced too.
///
/// A sandbox tenant's emulator runs over a ``StoreBackend`` (the console's store) and serves
/// only the console's routes: `/health`, `/v1/backup/status` and the reset pair.
///
/// Faults: ``ServiceFaults`` (failures by route, dropped answers), and per request the sandbox
/// header `X-Sandbox-Fault` (the real service has no such header and would ignore it):
/// `unavailable` fails the request with 500 before any effect, `lookup-delete` fails the
/// FactorLookup deletion of delete-factor or delete-backup after the S3 changes (500, rows left
/// behind), `drop` does the work and drops the connection before the answer.
public final class BackupServiceEmulator: Sendable {
    public static let tokenLifetimeSeconds: Int64 = 15 * 60
    public static let semver = "0.9.5"
    /// The blob limit (15 MiB) and the request limit on `/create` and `/sync` (16 MiB).
    public static let maxBlobBytes = 15 * 1024 * 1024
    public static let maxRequestBytes = 16 * 1024 * 1024
    /// axum's `DefaultBodyLimit` on every other route: 2 MB.
    public static let defaultBodyLimit = 2 * 1024 * 1024
    /// The upload routes, whose limit is ``maxRequestBytes`` with a `Content-Length` pre-check.
    public static let uploadPaths: Set<String> = ["/v1/create", "/v1/sync"]

    /// The most body bytes the service reads for `path`.
    public static func bodyLimit(path: String) -> Int {
        uploadPaths.contains(path) ? maxRequestBytes : defaultBodyLimit
    }

    /// What the service answers before reading a body: the upload routes' `Content-Length`
    /// pre-check (the app's `content_too_large`); `nil` when the request may be read.
    public static func refusedBeforeReading(path: String, contentLength: Int?) -> Answer? {
        guard uploadPaths.contains(path), let contentLength, contentLength > maxRequestBytes else { return nil }
        return .error(413, "content_too_large", "Request body of \(contentLength) bytes is too large.")
    }

    /// axum's answer to a body past the route's limit, read as far as the limit.
    public static let bodyTooLarge = Answer.plain(413, "Failed to buffer the request body: length limit exceeded")
    public static let faultHeader = "x-sandbox-fault"

    public typealias Answer = ServiceAnswer

    let backend: any ServiceBackend
    /// The full API's storage; `nil` for a store-backed (console routes only) emulator.
    public let storage: ServiceStorage?
    let tokens: ChallengeTokens
    let clock: WallClock
    let random: any RandomSource
    public let faults: ServiceFaults
    /// The service's Redis locks on create and sync.
    public let locks = ServiceLocks()

    /// - Parameter key: the token MAC key (32 bytes or more).
    public init(
        backend: any ServiceBackend, key: [UInt8], clock: WallClock = .system,
        random: any RandomSource = SystemRandom(), faults: ServiceFaults = ServiceFaults()
    ) {
        self.backend = backend
        storage = backend as? ServiceStorage
        tokens = ChallengeTokens(key: key)
        self.clock = clock
        self.random = random
        self.faults = faults
    }

    /// One request as the HTTP layer sees it: header names lowercased.
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var headers: [String: String]
        public var body: [UInt8]

        public init(method: String, path: String, headers: [String: String] = [:], body: [UInt8] = []) {
            self.method = method
            self.path = path
            self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
            self.body = body
        }

        public var contentType: String? { headers["content-type"] }
    }

    /// The request's context inside a route: its clock reading and fault.
    struct Call: Sendable {
        let request: Request
        let now: Int64
        let nowMillis: Int64
        let fault: String?

        /// Fails the route here (500) when the request's fault names this point.
        func failIf(_ point: String) throws(Refusal) {
            if fault == point { throw .internalError }
        }
    }

    /// The console routes' form, kept for callers that pass no headers.
    public func handle(method: String, path: String, contentType: String?, body: [UInt8]) async -> Answer {
        var headers: [String: String] = [:]
        if let contentType { headers["content-type"] = contentType }
        return await handle(Request(method: method, path: path, headers: headers, body: body))
    }

    public func handle(_ request: Request) async -> Answer {
        if let status = faults.takeFailure(request.path) {
            return .error(status, "internal_server_error", "Injected failure.")
        }
        let fault = request.headers[Self.faultHeader]
        let millis = clock.millis()
        let call = Call(request: request, now: millis / 1000, nowMillis: millis, fault: fault)
        if fault == "unavailable" { return Refusal.internalError.answer }
        guard let route = Self.routes[request.path] else { return .plain(404, "") }
        // axum's `get()` serves HEAD too, without the body.
        let head = request.method == "HEAD" && route.method == "GET"
        guard route.method == request.method || head else {
            return ServiceAnswer(status: 405, contentType: nil, body: [])
        }
        if route.needsStorage && storage == nil { return .plain(404, "") }
        do {
            var answer = try await dispatch(call)
            if fault == "drop" { answer.drop = true }
            if head { answer.body = [] }
            return answer
        } catch {
            return error.answer
        }
    }

    /// How each path is served: its method, and whether it needs the full storage.
    struct Route: Sendable {
        var method = "POST"
        var needsStorage = true
    }

    static let routes: [String: Route] = {
        var table: [String: Route] = [
            "/health": Route(method: "GET", needsStorage: false), "/ready": Route(method: "GET", needsStorage: false),
            "/v1/backup/status": Route(needsStorage: false), "/v1/reset/challenge/keypair": Route(needsStorage: false),
            "/v1/reset": Route(needsStorage: false),
        ]
        for path in [
            "/v1/create/challenge/passkey", "/v1/create/challenge/keypair", "/v1/create",
            "/v1/retrieve/challenge/passkey", "/v1/retrieve/challenge/keypair", "/v1/retrieve/from-challenge",
            "/v1/verify-factor/challenge/passkey", "/v1/verify-factor/challenge/keypair", "/v1/verify-factor",
            "/v1/add-sync-factor/challenge/keypair", "/v1/add-sync-factor", "/v1/add-factor/challenge",
            "/v1/add-factor", "/v1/sync/challenge/keypair", "/v1/sync", "/v1/retrieve-metadata/challenge/keypair",
            "/v1/retrieve-metadata", "/v1/delete-factor/challenge/keypair", "/v1/delete-factor",
            "/v1/delete-backup/challenge/keypair", "/v1/delete-backup",
        ] {
            table[path] = Route()
        }
        return table
    }()

    func dispatch(_ call: Call) async throws(Refusal) -> Answer {
        switch call.request.path {
        case "/health": return health(call)
        case "/ready": return .json(200, ["status": "ok"])
        case "/v1/backup/status": return try await status(call)
        case "/v1/create/challenge/passkey": return try createChallengePasskey(call)
        case "/v1/create/challenge/keypair": return try keypairChallenge(call, ChallengeContext.create)
        case "/v1/create": return try create(call)
        case "/v1/retrieve/challenge/passkey": return try discoverableChallenge(call, ChallengeContext.retrieve)
        case "/v1/retrieve/challenge/keypair": return try keypairChallenge(call, ChallengeContext.retrieve)
        case "/v1/retrieve/from-challenge": return try retrieveFromChallenge(call)
        case "/v1/verify-factor/challenge/passkey":
            return try discoverableChallenge(call, ChallengeContext.verifyFactor)
        case "/v1/verify-factor/challenge/keypair": return try keypairChallenge(call, ChallengeContext.verifyFactor)
        case "/v1/verify-factor": return try verifyFactor(call)
        case "/v1/add-sync-factor/challenge/keypair": return try keypairChallenge(call, ChallengeContext.addSyncFactor)
        case "/v1/add-sync-factor": return try addSyncFactor(call)
        case "/v1/add-factor/challenge": return try addFactorChallenge(call)
        case "/v1/add-factor": return try addFactor(call)
        case "/v1/sync/challenge/keypair": return try keypairChallenge(call, ChallengeContext.sync)
        case "/v1/sync": return try sync(call)
        case "/v1/retrieve-metadata/challenge/keypair":
            return try keypairChallenge(call, ChallengeContext.retrieveMetadata)
        case "/v1/retrieve-metadata": return try retrieveMetadata(call)
        case "/v1/delete-factor/challenge/keypair": return try deleteFactorChallenge(call)
        case "/v1/delete-factor": return try deleteFactor(call)
        case "/v1/delete-backup/challenge/keypair": return try keypairChallenge(call, ChallengeContext.deleteBackup)
        case "/v1/delete-backup": return try deleteBackup(call)
        case "/v1/reset/challenge/keypair": return try resetChallenge(call)
        case "/v1/reset": return try await reset(call)
        default: return .plain(404, "")
        }
    }

    // MARK: - The framework's extraction

    /// axum's `Json<T>`: 415 without a JSON content type, 400 for a body that is not JSON, 422 for
    /// JSON that does not fit the type.
    func json<T: ServiceRequest>(_ type: T.Type, _ call: Call) throws(Refusal) -> T {
        guard let contentType = call.request.contentType, Self.isJSON(contentType) else {
            throw Refusal(.plain(415, "Expected request with `Content-Type: application/json`"))
        }
        guard let value = FastJSON.parse(call.request.body) else {
            throw Refusal(.plain(400, "Failed to parse the request body as JSON: expected value at line 1 column 1"))
        }
        return try T(try Fields(value))
    }

    /// axum's `json_content_type`: a MIME type `application/json` or `application/…+json`,
    /// parameters allowed.
    static func isJSON(_ contentType: String) -> Bool {
        let essence = contentType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        let parts = essence.trimmingCharacters(in: .whitespaces).lowercased().split(
            separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0] == "application" else { return false }
        return parts[1] == "json" || (parts[1].hasSuffix("+json") && parts[1].count > 5)
    }

    /// The attestation gateway middleware of `/retrieve/from-challenge`, `/verify-factor` and
    /// `/delete-factor`: body read (≤ 1 MiB, UTF-8), header present, token valid for this request.
    func attest(_ call: Call) throws(Refusal) {
        guard call.request.body.count <= 1_048_576, String(validating: call.request.body, as: UTF8.self) != nil
        else { throw .bad("invalid_payload", "Body payload is invalid") }
        guard let token = call.request.headers[SandboxAttestation.header], !token.isEmpty else {
            throw .bad("invalid_attestation_token_header", "Attestation token header is invalid or not present.")
        }
        switch SandboxAttestation.verify(
            token, method: call.request.method, path: call.request.path,
            body: call.request.body.isEmpty ? nil : call.request.body, now: call.now)
        {
        case nil: return
        case .invalidToken?: throw .bad("invalid_attestation_token", "Invalid attestation token.")
        case .invalidClaim(let message)?: throw .bad("invalid_attestation_token_claim", message)
        case .unhashableBody?: throw .internalError
        }
    }

    /// The storage of the full API (routes that need it are only routed when it exists).
    func store() throws(Refusal) -> ServiceStorage {
        guard let storage else { throw Refusal(.plain(404, "")) }
        return storage
    }

    /// Maps a storage failure (an I/O error writing the export) to the service's 500.
    func io<T>(_ body: () throws(ConsoleError) -> T) throws(Refusal) -> T {
        do { return try body() } catch { throw .internalError }
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

    /// The next `count` resets are dropped before any work: the answer is lost, nothing happened.
    public func dropBeforeReset(count: Int = 1) { lock.withLock { dropsBefore = count } }

    func takeFailure(_ route: String) -> Int? {
        lock.withLock {
            guard let entry = failures[route], entry.count > 0 else { return nil }
            failures[route] = (entry.status, entry.count - 1)
            return entry.status
        }
    }

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

/// The service's Redis locks (`lock#<prefix>#<id>`, `SET NX` with a 120 s TTL, value the
/// owner's UUID): `crate_backup_lock:` (sic) around a create, `sync_backup_lock:` around a sync.
/// A held lock answers `423 conflicting_lock`.
public final class ServiceLocks: Sendable {
    public static let createPrefix = "crate_backup_lock:"
    public static let syncPrefix = "sync_backup_lock:"
    public static let ttlSeconds: Int64 = 120

    private let held = Mutex<[String: Int64]>([:])

    public init() {}

    /// Takes the lock on `prefix` + `id` until `now` + the TTL; `false` while another holds it.
    public func acquire(_ prefix: String, _ id: String, now: Int64) -> Bool {
        held.withLock { held in
            let key = "lock#\(prefix)#\(id)"
            if let until = held[key], until > now { return false }
            held[key] = now + Self.ttlSeconds
            return true
        }
    }

    public func release(_ prefix: String, _ id: String) {
        _ = held.withLock { $0.removeValue(forKey: "lock#\(prefix)#\(id)") }
    }

    /// Runs `body` holding the lock; `423 conflicting_lock` when it is held.
    func holding<T>(_ prefix: String, _ id: String, now: Int64, _ body: () throws(Refusal) -> T) throws(Refusal) -> T {
        guard acquire(prefix, id, now: now) else { throw .locked }
        defer { release(prefix, id) }
        return try body()
    }
}
