import Access
import BackupCrypto
import BackupModel
import ConsoleStore

/// A lookup hit: the backup and the FactorLookup key that found it (DESIGN.md §2 names
/// `backupId`, `scope` and `lookupKey`; the rest are additions).
public struct LookupResult: Sendable, Equatable, Codable {
    public var backupId: String
    /// `MAIN` or `SYNC`; `ACCOUNT` for `lookup account`, which reads the backup by id.
    public var scope: String
    /// The stored key that matched; the backup id itself for `lookup account`.
    public var lookupKey: String
    /// `passkey`, `oidc`, `keypair` or `account`.
    public var kind: String
    /// The metadata factor the key belongs to (absent for `lookup account`).
    public var factorId: String?

    public init(backupId: String, scope: String, lookupKey: String, kind: String, factorId: String? = nil) {
        self.backupId = backupId
        self.scope = scope
        self.lookupKey = lookupKey
        self.kind = kind
        self.factorId = factorId
    }
}

/// `lookup …`: finds the backup a factor opens, as the backup service would, and says so
/// when the index and the metadata disagree.
///
/// The metadata is the source of truth: an index row whose factor the backup no longer has is
/// `unauthorized_factor` (the service's name), a row naming a missing backup is
/// `dangling_lookup`; neither is a hit. Every answer that names a backup is audited.
public struct LookupService: Sendable {
    let store: any ConsoleStore

    public init(store: any ConsoleStore) { self.store = store }

    /// Looks up `query` in the session's tenant and audits the answer (`backup.lookup`).
    /// - Throws: ``ConsoleError`` `invalid_*` (bad input, naming the field), `not_found`,
    ///   `unauthorized_factor`, `dangling_lookup`, `permission_denied`, or the store's errors.
    public func lookup(_ query: LookupQuery, session: Session) async throws(ConsoleError) -> LookupResult {
        try await session.require(.lookup)
        let outcome = try await resolve(query, tenant: session.tenantName)
        switch outcome {
        case .hit(let result):
            try await store.appendReadAudit(
                session.audit(
                    "backup.lookup", target: result.backupId, details: ["kind": query.kind, "scope": result.scope]))
            return result
        case .refused(let backupId, let error):
            try await store.appendReadAudit(
                session.audit("backup.lookup", target: backupId, details: ["kind": query.kind, "outcome": error.code]))
            throw error
        }
    }

    /// What a lookup found, before auditing.
    package enum Outcome: Sendable, Equatable {
        case hit(LookupResult)
        /// The index names `backupId` but the answer is an error (unauthorized, dangling).
        case refused(backupId: String, ConsoleError)
    }

    /// The read half of ``lookup(_:session:)``: no permission check and no audit. Only for
    /// callers that do both themselves, and for the benchmark that measures the read path.
    package func resolve(_ query: LookupQuery, tenant: TenantName) async throws(ConsoleError) -> Outcome {
        if case .account(let text) = query { return try await account(text, tenant: tenant) }
        let candidates = try query.candidateKeys()
        let prefetch = LookupPrefetch.current
        for key in candidates {
            let resolution: LookupResolution?
            if let prefetch, let known = await prefetch.resolution(of: key.rawValue, tenant: tenant, store: store) {
                resolution = known
            } else {
                resolution = try await store.resolveLookup(tenant: tenant, pk: key.rawValue)
            }
            guard let resolution else { continue }
            return Self.outcome(resolution, key: key, kind: query.kind)
        }
        if case .keypair(let text, _) = query, let bytes = LookupQuery.publicKeyBytes(LookupQuery.trimmed(text)),
            !P256.isValidPublicKey(bytes)
        {
            throw LookupQuery.notOnCurve()
        }
        throw ConsoleError.notFound(
            "No backup in tenant \(tenant) has the \(query.kind) factor \(describe(candidates)).")
    }

    /// Turns the index's answer into a hit or a refusal, as the service does before trusting a
    /// row: the backup must exist and its metadata must still imply the key. The store checks
    /// both in the lookup's own statement, against the keys it derived from the metadata at
    /// write time, so no metadata is decoded here.
    static func outcome(_ resolution: LookupResolution, key: FactorLookupKey, kind: String) -> Outcome {
        let pk = key.rawValue
        let backupId = resolution.backupId
        guard resolution.backupExists else {
            return .refused(
                backupId: backupId,
                ConsoleError(
                    .notFound, code: "dangling_lookup",
                    "The index maps \(HealthChecks.abbreviate(pk)) to backup \(backupId), which does not exist "
                        + "(a deletion that did not finish); no backup opens with this factor."))
        }
        guard let factorId = resolution.factorId else {
            return .refused(
                backupId: backupId,
                ConsoleError(
                    .notFound, code: "unauthorized_factor",
                    "The index maps \(HealthChecks.abbreviate(pk)) to backup \(backupId), but its metadata no "
                        + "longer has this factor (unauthorized_factor): the service refuses it; see `show \(backupId)`."
                ))
        }
        return .hit(
            LookupResult(backupId: backupId, scope: key.scope.rawValue, lookupKey: pk, kind: kind, factorId: factorId))
    }

    /// The id's syntax is checked first. Whether its key is a point on secp256k1 matters only
    /// on a miss, to tell a mistyped id from one that is not there: an id that names a stored
    /// backup is answered as it is, as `show` does.
    func account(_ text: String, tenant: TenantName) async throws(ConsoleError) -> Outcome {
        let id = try BackupAccountID(typed: LookupQuery.trimmed(text))
        guard try await store.backupExists(tenant: tenant, id: id.rawValue) else {
            try BackupAccountKey.validate(id)
            throw ConsoleError.notFound("No backup in tenant \(tenant) has the id \(id.rawValue).")
        }
        return .hit(LookupResult(backupId: id.rawValue, scope: "ACCOUNT", lookupKey: id.rawValue, kind: "account"))
    }

    /// The keys looked for, whole: the operator must see exactly what was searched. Only a
    /// key longer than a terminal line is shortened, in the middle.
    func describe(_ keys: [FactorLookupKey]) -> String {
        keys.map { key in
            // What was asked for is echoed, unless it looks like a secret pasted in its place.
            let text = SecretShape.redact(key.rawValue)
            guard text.count > 120 else { return text }
            return String(text.prefix(80)) + "…" + String(text.suffix(20))
        }.joined(separator: " or ")
    }
}
