/// Fault injection for the sandbox: what a flaky, slow or rate-limited Turnkey looks like.
///
/// Rates are fractions of requests (0…1), drawn from the sandbox's seeded generator so a run
/// is reproducible. Injected faults are answered before the stamp is checked, as a load
/// balancer or Turnkey's rate limiter would.
public struct SandboxFaults: Codable, Sendable, Equatable {
    /// Added to every answer, milliseconds.
    public var latencyMillis: Int64 = 0
    /// Fraction answered 500/503 (alternating).
    public var serverErrorRate: Double = 0
    /// Fraction answered 429 `RATE_LIMIT_EXCEEDED` (with `Retry-After: 1` when ``retryAfterSeconds`` is set).
    public var rateLimitErrorRate: Double = 0
    /// Fraction answered 429 for a quota (not transient).
    public var quotaErrorRate: Double = 0
    /// Windows `[start, end)` in sandbox-clock milliseconds during which everything is 503.
    public var outages: [Outage] = []
    /// A real limiter: requests per second (0 = none), per-second burst; excess gets 429.
    public var rateLimitRPS: Double = 0
    /// Fraction of deletions that start PENDING and complete after ``pendingPolls`` `get_activity` calls.
    public var pendingRate: Double = 0
    public var pendingPolls: Int = 2
    /// Sub-orgs whose deletion stops at CONSENSUS_NEEDED.
    public var consensusSubOrgs: [String] = []
    /// Sub-orgs whose deletion is REJECTED (a policy or an approver said no).
    public var rejectedSubOrgs: [String] = []
    /// `Retry-After` seconds sent with injected 429s, if any.
    public var retryAfterSeconds: Int?

    public struct Outage: Codable, Sendable, Equatable {
        public var startMillis: Int64
        public var endMillis: Int64
        public init(startMillis: Int64, endMillis: Int64) {
            self.startMillis = startMillis
            self.endMillis = endMillis
        }
    }

    public init(
        latencyMillis: Int64 = 0, serverErrorRate: Double = 0, rateLimitErrorRate: Double = 0,
        quotaErrorRate: Double = 0, outages: [Outage] = [], rateLimitRPS: Double = 0, pendingRate: Double = 0,
        pendingPolls: Int = 2, consensusSubOrgs: [String] = [], rejectedSubOrgs: [String] = [],
        retryAfterSeconds: Int? = nil
    ) {
        self.latencyMillis = latencyMillis
        self.serverErrorRate = serverErrorRate
        self.rateLimitErrorRate = rateLimitErrorRate
        self.quotaErrorRate = quotaErrorRate
        self.outages = outages
        self.rateLimitRPS = rateLimitRPS
        self.pendingRate = pendingRate
        self.pendingPolls = pendingPolls
        self.consensusSubOrgs = consensusSubOrgs
        self.rejectedSubOrgs = rejectedSubOrgs
        self.retryAfterSeconds = retryAfterSeconds
    }

    public static let none = SandboxFaults()

    /// Every member is optional in a state file: a drill writes only the faults it wants.
    public init(from decoder: any Decoder) throws {
        enum K: String, CodingKey {
            case latencyMillis, serverErrorRate, rateLimitErrorRate, quotaErrorRate, outages, rateLimitRPS
            case pendingRate, pendingPolls, consensusSubOrgs, rejectedSubOrgs, retryAfterSeconds
        }
        let c = try decoder.container(keyedBy: K.self)
        self.init(
            latencyMillis: try c.decodeIfPresent(Int64.self, forKey: .latencyMillis) ?? 0,
            serverErrorRate: try c.decodeIfPresent(Double.self, forKey: .serverErrorRate) ?? 0,
            rateLimitErrorRate: try c.decodeIfPresent(Double.self, forKey: .rateLimitErrorRate) ?? 0,
            quotaErrorRate: try c.decodeIfPresent(Double.self, forKey: .quotaErrorRate) ?? 0,
            outages: try c.decodeIfPresent([Outage].self, forKey: .outages) ?? [],
            rateLimitRPS: try c.decodeIfPresent(Double.self, forKey: .rateLimitRPS) ?? 0,
            pendingRate: try c.decodeIfPresent(Double.self, forKey: .pendingRate) ?? 0,
            pendingPolls: try c.decodeIfPresent(Int.self, forKey: .pendingPolls) ?? 2,
            consensusSubOrgs: try c.decodeIfPresent([String].self, forKey: .consensusSubOrgs) ?? [],
            rejectedSubOrgs: try c.decodeIfPresent([String].self, forKey: .rejectedSubOrgs) ?? [],
            retryAfterSeconds: try c.decodeIfPresent(Int.self, forKey: .retryAfterSeconds))
    }
}

/// A user of a sandbox organization: a name, one API key, and whether it may delete the org.
public struct SandboxUser: Codable, Sendable, Equatable {
    public var name: String
    /// Lowercase hex of the 33-byte compressed key.
    public var publicKey: String
    public var scheme: String
    public var canDelete: Bool

    public init(name: String, publicKey: String, scheme: String, canDelete: Bool) {
        self.name = name
        self.publicKey = publicKey.lowercased()
        self.scheme = scheme
        self.canDelete = canDelete
    }

    /// `break_glass_user_<last 6 hex of the Backup Account public key>` (secp256k1, delete only).
    public static func breakGlass(publicKeyHex: String) -> SandboxUser {
        SandboxUser(
            name: "break_glass_user_\(publicKeyHex.suffix(6))", publicKey: publicKeyHex,
            scheme: "SIGNATURE_SCHEME_TK_API_SECP256K1", canDelete: true)
    }
}
