import BackupCrypto
import BackupModel
import Foundation
import Turnkey

/// A protocol-faithful Turnkey emulator for the calls the console makes (facts §6).
///
/// It verifies `X-Stamp` of both schemes over the exact body bytes, keeps a parent org with its
/// API keys and sub-orgs with their users, lets only a sub-org's own users delete it (the parent
/// may list and read), pages `list_suborgs`, deduplicates activities by a fingerprint of the
/// body, and answers errors in Turnkey's shape. ``SandboxFaults`` adds latency, error rates,
/// outages, PENDING activities and a rate limit. HTTP-agnostic: ``SandboxServer`` serves it over
/// Hummingbird, ``SandboxTransport`` calls it in-process.
public actor TurnkeySandbox {
    public let parentOrgId: String
    let directory: any SandboxDirectory
    var parentUsers: [SandboxUser]
    /// Users every sub-org has unless ``setUsers(_:of:)`` overrode them (the cleanup key's user).
    var defaultSubOrgUsers: [SandboxUser]
    var overrides: [String: [SandboxUser]] = [:]
    /// Sub-orgs (by id hash) that lack the default delete-capable users, per mille.
    var missingDefaultUsersPerMille: Int
    public private(set) var faults: SandboxFaults
    let timing: TurnkeyTiming
    let rng: SeededRandom

    var activities: [String: Activity] = [:]
    /// Sub-orgs made by `create_sub_organization`, with their users, keys, providers and policies.
    public internal(set) var details: [String: SandboxSubOrg] = [:]
    var fingerprintsById: [String: String] = [:]
    /// Every deletion body received per sub-org, in order (for tests: identical across retries).
    public internal(set) var deleteBodies: [String: [String]] = [:]
    public internal(set) var stats = Stats()
    /// Bumped by every change a state file must keep (a body received, a sub-org deleted).
    public internal(set) var mutations = 0
    var bucketTokens: Double = 0
    var bucketRefilledAt: Int64 = -1

    /// Request counters.
    public struct Stats: Sendable, Equatable {
        public var requests = 0
        public var injectedFaults = 0
        public var rateLimited = 0
        public var deletions = 0
        public var listPages = 0
    }

    struct Activity {
        var id: String
        var organizationId: String
        var status: String
        var fingerprint: String
        var pollsLeft: Int
        var type = TurnkeyActivityBody.deleteSubOrganizationType
        var result: JSONValue?
    }

    public init(
        parentOrgId: String, directory: any SandboxDirectory, parentUsers: [SandboxUser],
        defaultSubOrgUsers: [SandboxUser], missingDefaultUsersPerMille: Int = 0, faults: SandboxFaults = .none,
        timing: TurnkeyTiming = .system, seed: UInt64 = 1
    ) {
        self.parentOrgId = parentOrgId
        self.directory = directory
        self.parentUsers = parentUsers
        self.defaultSubOrgUsers = defaultSubOrgUsers
        self.missingDefaultUsersPerMille = missingDefaultUsersPerMille
        self.faults = faults
        self.timing = timing
        rng = SeededRandom(seed: seed)
    }

    public func setFaults(_ faults: SandboxFaults) { self.faults = faults }

    /// Break-glass users found at request time (a store-backed sandbox: the Backup Account Key of
    /// the backup that references the sub-org, or last did).
    var breakGlassUsers: (@Sendable (String) async -> [SandboxUser])?

    public func setBreakGlassUsers(_ resolve: @escaping @Sendable (String) async -> [SandboxUser]) {
        breakGlassUsers = resolve
    }

    /// Replaces the users of one sub-org (e.g. one with a break-glass user and no cleanup key).
    public func setUsers(_ users: [SandboxUser], of subOrgId: String) { overrides[subOrgId] = users }

    public func overriddenUsers() -> [String: [SandboxUser]] { overrides }

    /// Restores bodies recorded by an earlier process (the standalone server's state file).
    public func restoreRecording(_ bodies: [String: [String]]) { deleteBodies = bodies }

    /// Restores the sub-orgs an earlier process made (the standalone server's state file).
    public func restoreDetails(_ saved: [String: SandboxSubOrg]) { details = saved }

    /// Adds sub-orgs made elsewhere (a simulation landing in a sandbox tenant).
    public func addDetails(_ more: [String: SandboxSubOrg]) { details.merge(more) { _, new in new } }

    public func resetRecording() {
        deleteBodies = [:]
        stats = Stats()
    }

    /// The users of a sub-org: its override, or the defaults (minus delete-capable ones for the
    /// deterministic fraction of sub-orgs that predate the cleanup key), plus `auth_user_main`.
    func users(of subOrgId: String) async -> [SandboxUser] {
        if let explicit = overrides[subOrgId] { return explicit }
        let breakGlass = await breakGlassUsers?(subOrgId) ?? []
        let digest = SHA256.hash(Array(subOrgId.utf8))
        let main = SandboxUser(
            name: "auth_user_main", publicKey: "02" + Hex.encode(digest), scheme: TurnkeyStamp.Scheme.p256.rawValue,
            canDelete: false)
        let bucket = (Int(digest[0]) << 8 | Int(digest[1])) % 1000
        return [main] + (bucket < missingDefaultUsersPerMille ? [] : defaultSubOrgUsers)
            + breakGlass
    }

    /// Answers one request: `path`, the `X-Stamp` header (if any) and the exact body bytes.
    public func handle(path: String, stamp: String?, body: [UInt8]) async -> TurnkeyHTTPResponse {
        await handle(Request(path: path, stamp: stamp, body: body))
    }

    /// One request: the path, the stamp headers (`X-Stamp`, or a passkey's `X-Stamp-WebAuthn`),
    /// the exact body bytes, and the sandbox-only `X-Sandbox-Fault` header (`unavailable` → 503,
    /// `internal` → 500, `rate_limited` → 429, answered before anything is looked at).
    public struct Request: Sendable {
        public var path: String
        public var stamp: String?
        public var webAuthnStamp: String?
        public var body: [UInt8]
        public var fault: String?

        public init(path: String, stamp: String?, webAuthnStamp: String? = nil, body: [UInt8], fault: String? = nil) {
            self.path = path
            self.stamp = stamp
            self.webAuthnStamp = webAuthnStamp
            self.body = body
            self.fault = fault
        }
    }

    public func handle(_ request: Request) async -> TurnkeyHTTPResponse {
        stats.requests += 1
        if faults.latencyMillis > 0 { try? await timing.sleep(faults.latencyMillis) }
        if let fault = request.fault, let answer = Self.headerFault(fault) {
            stats.injectedFaults += 1
            return answer
        }
        if let injected = injectedFault() { return injected }
        let signer: StampSigner
        if let header = request.stamp {
            guard let parsed = try? TurnkeyStamp(headerValue: header) else {
                return Self.error(401, 16, "missing or malformed X-Stamp header", "UNAUTHENTICATED")
            }
            guard parsed.verify(body: request.body) == .valid else {
                return Self.error(401, 16, "request stamp signature is invalid", "INVALID_SIGNATURE")
            }
            signer = .apiKey(Hex.encode(parsed.publicKey))
        } else if let header = request.webAuthnStamp, let parsed = WebAuthnStamp(header: header) {
            signer = .passkey(parsed)
        } else {
            return Self.error(401, 16, "missing or malformed X-Stamp header", "UNAUTHENTICATED")
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any],
            let org = object["organizationId"] as? String
        else { return Self.error(400, 3, "request body must be JSON with an organizationId", "INVALID_REQUEST") }
        let key = signer.apiKey ?? ""
        let path = request.path
        do {
            // A sub-org whose state its directory keeps (a simulated world in a sandbox tenant).
            if org != parentOrgId, details[org] == nil, let kept = try await directory.state(of: org) {
                details[org] = kept
            }
            switch path {
            case TurnkeyWire.whoamiPath: return try await whoami(org: org, key: key)
            case TurnkeyWire.listSubOrgsPath: return try await listSubOrgs(org: org, key: key, object: object)
            case TurnkeyWire.listUsersPath: return try await listUsers(org: org, key: key)
            case Self.getOAuthProvidersPath: return try await getOAuthProviders(org: org, key: key)
            case TurnkeyWire.getActivityPath: return try await getActivity(org: org, key: key, object: object)
            case TurnkeyWire.deleteSubOrganizationPath:
                return try await delete(org: org, signer: signer, object: object, body: request.body)
            default:
                if let type = Self.submitTypes[path] {
                    return try await submit(type: type, org: org, signer: signer, body: request.body)
                }
                return Self.error(404, 5, "unknown route \(path)", "NOT_FOUND")
            }
        } catch {
            return Self.error(500, 13, "sandbox store failure: \(error.message)", "INTERNAL")
        }
    }

    static func headerFault(_ fault: String) -> TurnkeyHTTPResponse? {
        switch fault {
        case "unavailable": error(503, 14, "service unavailable (sandbox fault)", "UNAVAILABLE")
        case "internal": error(500, 13, "internal server error (sandbox fault)", "INTERNAL")
        case "rate_limited": rateLimit(retryAfter: nil)
        default: nil
        }
    }

    // MARK: Faults

    func injectedFault() -> TurnkeyHTTPResponse? {
        let now = timing.clock.millis()
        if faults.outages.contains(where: { $0.startMillis <= now && now < $0.endMillis }) {
            stats.injectedFaults += 1
            return Self.error(503, 14, "service unavailable (sandbox outage)", "UNAVAILABLE")
        }
        if faults.rateLimitRPS > 0 && !takeBucketToken(now: now) {
            stats.rateLimited += 1
            return Self.rateLimit(retryAfter: faults.retryAfterSeconds)
        }
        let draw = Double(rng.uniform(1_000_000)) / 1_000_000
        var edge = faults.serverErrorRate
        if draw < edge {
            stats.injectedFaults += 1
            return stats.injectedFaults % 2 == 0
                ? Self.error(500, 13, "internal server error (sandbox fault)", "INTERNAL")
                : Self.error(503, 14, "service unavailable (sandbox fault)", "UNAVAILABLE")
        }
        edge += faults.rateLimitErrorRate
        if draw < edge {
            stats.injectedFaults += 1
            return Self.rateLimit(retryAfter: faults.retryAfterSeconds)
        }
        edge += faults.quotaErrorRate
        if draw < edge {
            stats.injectedFaults += 1
            return Self.error(429, 8, "activity quota exceeded for this organization", "QUOTA_EXCEEDED")
        }
        return nil
    }

    /// One-second token bucket at ``SandboxFaults/rateLimitRPS``.
    func takeBucketToken(now: Int64) -> Bool {
        let capacity = max(1, faults.rateLimitRPS)
        if bucketRefilledAt < 0 {
            bucketTokens = capacity
            bucketRefilledAt = now
        }
        bucketTokens = min(capacity, bucketTokens + Double(now - bucketRefilledAt) * faults.rateLimitRPS / 1000)
        bucketRefilledAt = now
        guard bucketTokens >= 1 else { return false }
        bucketTokens -= 1
        return true
    }
}
