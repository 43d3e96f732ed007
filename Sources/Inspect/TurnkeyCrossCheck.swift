import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import Turnkey

/// The live checks of `check --turnkey`, by their stable names (after the static checks).
public enum LiveCheckName: String, Sendable, Codable, CaseIterable {
    /// The sub-org a TURNKEY key names still exists.
    case turnkeySubOrg = "turnkey_suborg"
    /// Every OIDC factor's `turnkeyProviderId` is a provider of that sub-org.
    case turnkeyOIDCProviders = "turnkey_oidc_providers"
    /// Every sync factor has a Turnkey API key in that sub-org.
    case turnkeySyncKeys = "turnkey_sync_keys"
}

/// `check --turnkey`: each backup's sub-org read from Turnkey (`list_users`, as the parent org
/// may), and what would break the user's next flow there.
///
/// - the sub-org is gone: OIDC recovery (the factor secret lives there) and BF-7/BF-8's
///   Turnkey steps fail (`fail`);
/// - an OIDC factor whose provider is not in the sub-org: that account cannot sign in to
///   Turnkey, so it cannot open the backup (`fail`);
/// - a sync factor with no matching API key: BF-7 stamped by that device gets
///   `PUBLIC_KEY_NOT_FOUND` — fine while the user has a passkey to fall back on (`warn`),
///   otherwise the deletion leaves an orphan (`fail`).
///
/// Reads go through the tenant's Turnkey client (its rate limit, retries and budget), up to
/// ``concurrency`` at a time — 8 by default, the HTTP client's connections per host, so no call
/// waits for a connection (a wait past the connect timeout fails it unsent); only backups with
/// a TURNKEY key cost a call.
public struct TurnkeyCrossCheck: Sendable {
    let store: any ConsoleStore
    let client: TurnkeyClient
    let signer: TurnkeySigner
    public var concurrency: Int
    public var pageSize = 500

    public init(store: any ConsoleStore, client: TurnkeyClient, signer: TurnkeySigner, concurrency: Int = 8) {
        self.store = store
        self.client = client
        self.signer = signer.prepared()
        self.concurrency = max(1, concurrency)
    }

    /// The non-ok live results of every backup that has any, and how many sub-orgs were read.
    public struct Outcome: Sendable {
        public var results: [String: [HealthResult]]
        public var subOrgsRead: Int
    }

    /// Checks one backup (`backupId`, a unique prefix will do) or every backup of the tenant.
    public func run(tenant: TenantName, backupId: String?, progress: ((Int) throws(ConsoleError) -> Void)? = nil)
        async throws(ConsoleError) -> Outcome
    {
        guard let backupId else { return try await run(tenant: tenant, progress: progress) }
        let record = try await BackupInspector(store: store).record(backupId, tenant: tenant)
        guard let subOrg = record.metadata.turnkeySubOrgIds.first else { return Outcome(results: [:], subOrgsRead: 0) }
        let checked = try await check([(record.backupId, record.metadata, subOrg)])
        var outcome = Outcome(results: [:], subOrgsRead: 1)
        for (id, results) in checked where !results.isEmpty { outcome.results[id] = results }
        return outcome
    }

    /// Checks every backup of `tenant`.
    /// - Parameter progress: called with the backups looked at so far.
    /// - Throws: ``ConsoleError`` from the store, or `.remote` when Turnkey cannot be read.
    public func run(tenant: TenantName, progress: ((Int) throws(ConsoleError) -> Void)? = nil)
        async throws(ConsoleError) -> Outcome
    {
        var outcome = Outcome(results: [:], subOrgsRead: 0)
        var after: String?
        var seen = 0
        while true {
            let page = try await store.backups(tenant: tenant, after: after, limit: pageSize)
            let work = page.compactMap { record -> (String, BackupMetadata, String)? in
                guard let subOrg = record.metadata.turnkeySubOrgIds.first else { return nil }
                return (record.backupId, record.metadata, subOrg)
            }
            let checked = try await check(work)
            outcome.subOrgsRead += work.count
            for (backupId, results) in checked where !results.isEmpty { outcome.results[backupId] = results }
            seen += page.count
            try progress?(seen)
            guard page.count == pageSize, let last = page.last else { break }
            after = last.backupId
        }
        return outcome
    }

    /// The non-ok live results of a few backups, read concurrently.
    func check(_ work: [(String, BackupMetadata, String)]) async throws(ConsoleError) -> [(String, [HealthResult])] {
        var results: [(String, [HealthResult])] = []
        var failure: ConsoleError?
        await withTaskGroup(of: Result<(String, [HealthResult]), ConsoleError>.self) { group in
            var next = 0
            func add() {
                guard next < work.count else { return }
                let (backupId, metadata, subOrg) = work[next]
                next += 1
                group.addTask {
                    do throws(TurnkeyError) {
                        let users = try await client.listUsers(organizationId: subOrg, signer: signer)
                        return .success((backupId, Self.findings(metadata, subOrg: subOrg, users: users)))
                    } catch
                        where error.kind == .organizationNotFound || error.turnkeyErrorCode == "ORGANIZATION_NOT_FOUND"
                    {
                        return .success((backupId, [Self.gone(subOrg)]))
                    } catch {
                        return .failure(
                            error.consoleError("Reading Turnkey sub-org \(subOrg) of backup \(backupId) failed"))
                    }
                }
            }
            for _ in 0..<concurrency { add() }
            while let done = await group.next() {
                switch done {
                case .success(let value): results.append(value)
                case .failure(let error):
                    // The first failure is the cause: the calls cancelled after it fail as "cancelled".
                    if failure == nil { failure = error }
                    group.cancelAll()
                }
                if failure == nil { add() }
            }
        }
        if let failure { throw failure }
        return results
    }

    static func gone(_ subOrg: String) -> HealthResult {
        HealthResult(
            LiveCheckName.turnkeySubOrg, .fail,
            "the sub-org \(subOrg) is gone at Turnkey: OIDC recovery and the Turnkey steps of factor and backup "
                + "deletion will fail; the user must re-add the OIDC factor")
    }

    /// The non-ok live results for a backup whose sub-org answered with `users`.
    static func findings(_ metadata: BackupMetadata, subOrg: String, users: [TurnkeyWire.User]) -> [HealthResult] {
        var results: [HealthResult] = []
        let providers = Set(users.flatMap { ($0.oauthProviders ?? []).map(\.providerId) })
        let missing = metadata.factors.compactMap { factor -> String? in
            guard case .oidcAccount(let oidc) = factor.kind else { return nil }
            return providers.contains(oidc.turnkeyProviderId ?? "") ? nil : factor.id
        }
        if let first = missing.first {
            results.append(
                HealthResult(
                    LiveCheckName.turnkeyOIDCProviders, .fail,
                    "\(HealthChecks.count(missing.count, "OIDC factor")) (first \(first)) \(missing.count == 1 ? "has" : "have") "
                        + "no provider in sub-org \(subOrg): that account cannot sign in to Turnkey to open the backup")
            )
        }
        let keys = Set(users.flatMap { $0.apiKeys.map { $0.credential.publicKey.lowercased() } })
        let unmatched = metadata.syncFactors.compactMap { factor -> String? in
            guard case .ecKeypair(let key) = factor.kind, let bytes = Base64.decode(key, alphabet: .standard),
                let compressed = try? P256.compress(bytes)
            else { return factor.id }
            return keys.contains(Hex.encode(compressed)) ? nil : factor.id
        }
        if let first = unmatched.first {
            let hasPasskey = metadata.factors.contains { if case .passkey = $0.kind { true } else { false } }
            results.append(
                HealthResult(
                    LiveCheckName.turnkeySyncKeys, hasPasskey ? .warn : .fail,
                    "\(HealthChecks.count(unmatched.count, "sync factor")) (first \(first)) \(unmatched.count == 1 ? "has" : "have") "
                        + "no API key in sub-org \(subOrg): a factor deletion from that device gets PUBLIC_KEY_NOT_FOUND"
                        + (hasPasskey
                            ? " and falls back to the passkey"
                            : " and, with no passkey to fall back on, leaves the sub-org orphaned")))
        }
        return results
    }

    /// The ok results every checked backup without a finding shows.
    public static let okResults: [HealthResult] = [
        HealthResult(LiveCheckName.turnkeySubOrg, .ok, "the sub-org exists, or the backup has none"),
        HealthResult(LiveCheckName.turnkeyOIDCProviders, .ok, "every OIDC factor has its Turnkey provider"),
        HealthResult(LiveCheckName.turnkeySyncKeys, .ok, "every sync factor has its Turnkey API key"),
    ]

    /// The three live results of one backup (its findings in place of the ok results).
    public static func results(_ findings: [HealthResult]?) -> [HealthResult] {
        guard let findings else { return okResults }
        return okResults.map { ok in findings.first { $0.check == ok.check } ?? ok }
    }
}
