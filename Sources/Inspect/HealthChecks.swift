import BackupModel
import ConsoleStore

/// The health checks: pure functions of a ``HealthInput``, one result per ``HealthCheckName``
/// in that enum's order, whatever the input.
public enum HealthChecks {
    /// Runs every check.
    public static func run(_ input: HealthInput) -> [HealthResult] {
        let s = input.summary
        let missing = input.unindexedKeys.filter { $0.owner == nil }
        let shared = input.unindexedKeys.filter { $0.owner != nil }
        return [
            lookupRowsMissing(missing, unindexable: s.unindexedFactors),
            lookupRowsUnauthorized(input.unauthorizedKeys),
            factorShared(shared),
            factorKeys(s), orphanKeys(s), oidcWithoutPasskey(s), factorLimits(s), syncFactors(s),
            sealedBlob(s.blobSize), manifestHash(malformed: s.malformedManifestHash),
        ]
    }

    /// Total factors behind `keys` (a key two factors imply counts twice, as it did in the metadata).
    static func factors(_ keys: [UnindexedKey]) -> Int { keys.reduce(0) { $0 + $1.copies } }

    static func lookupRowsMissing(_ missing: [UnindexedKey], unindexable: Int) -> HealthResult {
        if let first = missing.first {
            let n = factors(missing)
            return HealthResult(
                .lookupRowsMissing, .fail,
                "\(count(n, "factor")) of the metadata \(n == 1 ? "has" : "have") no index row "
                    + "(first \(abbreviate(first.pk))): the user cannot find this backup with it; re-import the "
                    + "service's FactorLookup export")
        }
        if unindexable > 0 {
            return HealthResult(
                .lookupRowsMissing, .warn,
                "\(count(unindexable, "OIDC factor")) without a sub (exported metadata) cannot be matched to the "
                    + "index; import the stored form to check it")
        }
        return HealthResult(.lookupRowsMissing, .ok, "every factor of the metadata is indexed")
    }

    static func lookupRowsUnauthorized(_ stale: [String]) -> HealthResult {
        guard let first = stale.first else {
            return HealthResult(.lookupRowsUnauthorized, .ok, "no index row names a removed factor")
        }
        return HealthResult(
            .lookupRowsUnauthorized, .warn,
            "\(count(stale.count, "index row")) (first \(abbreviate(first))) \(stale.count == 1 ? "names" : "name") a "
                + "factor no longer in the metadata: the service answers unauthorized_factor and the factor cannot be "
                + "enrolled elsewhere until the row is removed")
    }

    static func factorShared(_ shared: [UnindexedKey]) -> HealthResult {
        guard let first = shared.first, let other = first.owner else {
            return HealthResult(.factorShared, .ok, "no factor is indexed to another backup")
        }
        let n = factors(shared)
        return HealthResult(
            .factorShared, .fail,
            "\(count(n, "factor")) (first \(abbreviate(first.pk))) \(n == 1 ? "is" : "are") indexed "
                + "to backup \(abbreviateId(other)): the factor is enrolled in two backups and opens the other one")
    }

    /// Factor and key counts by kind: passkey ↔ PRF, keychain keypair ↔ ICLOUD, OIDC ↔ TURNKEY.
    /// (factors, keys, factor noun, key tag, keys the factors need) per pairing. Every OIDC
    /// account of a backup opens the one TURNKEY key (the factor secret lives in the one
    /// sub-org, and a backup holds at most one key per kind), so any number of OIDC factors
    /// needs exactly one; a passkey or keychain keypair needs a key of its own.
    static func pairs(_ s: BackupSummary) -> [(Int, Int, String, String, Int)] {
        [
            (s.passkeys, s.prfKeys, "passkey", "PRF", s.passkeys),
            (s.keychainFactors, s.icloudKeys, "keychain keypair", "ICLOUD", s.keychainFactors),
            (s.oidcFactors, s.turnkeyKeys, "OIDC factor", "TURNKEY", min(s.oidcFactors, 1)),
        ]
    }

    static func factorKeys(_ summary: BackupSummary) -> HealthResult {
        let gaps = pairs(summary).filter { $0.4 > $0.1 }
        guard !gaps.isEmpty else {
            return HealthResult(.factorKeys, .ok, "every main factor has its encryption key")
        }
        let text = gaps.map { "\($0.0) \($0.2)(s) but \($0.1) \($0.3) key(s)" }.joined(separator: ", ")
        return HealthResult(
            .factorKeys, .fail,
            "\(text): a factor without its key cannot decrypt the backup; the user must re-add that factor")
    }

    static func orphanKeys(_ summary: BackupSummary) -> HealthResult {
        let extra = pairs(summary).filter { $0.1 > $0.4 }
        guard !extra.isEmpty else {
            return HealthResult(.orphanKeys, .ok, "every encryption key has its factor")
        }
        let text = extra.map { "\($0.1) \($0.3) key(s) for \($0.0) \($0.2)(s)" }.joined(separator: ", ")
        return HealthResult(
            .orphanKeys, .warn, "\(text): a key without its factor is left over from a removal that did not finish")
    }

    static func oidcWithoutPasskey(_ summary: BackupSummary) -> HealthResult {
        guard summary.oidcFactors > 0, summary.passkeys == 0 else {
            return HealthResult(.oidcWithoutPasskey, .ok, "no OIDC factor stands without a passkey")
        }
        return HealthResult(
            .oidcWithoutPasskey, .warn,
            "OIDC factor without a passkey: the app cannot manage this state; the user should add a passkey "
                + "after opening the backup with the OIDC account")
    }

    static func factorLimits(_ metadata: BackupMetadata) -> HealthResult {
        factorLimits(BackupSummary(metadata: metadata, blobSize: nil))
    }

    static func factorLimits(_ summary: BackupSummary) -> HealthResult {
        let main = summary.mainFactors
        let sync = summary.syncFactors
        if main > BackupMetadata.maxMainFactors || sync > BackupMetadata.maxSyncFactors {
            return HealthResult(
                .factorLimits, .fail,
                "\(main) main and \(sync) sync factors exceed the limits (\(BackupMetadata.maxMainFactors) main, "
                    + "\(BackupMetadata.maxSyncFactors) sync): the service rejects updates until factors are removed")
        }
        if main == 0 {
            return HealthResult(
                .factorLimits, .warn, "no main factor: only /reset with the Root Key can reopen this backup")
        }
        return HealthResult(.factorLimits, .ok, "\(main) main and \(sync) sync factors, within the limits")
    }

    static func syncFactors(_ summary: BackupSummary) -> HealthResult {
        guard let first = summary.firstBadSyncFactor, summary.badSyncFactors > 0 else {
            return HealthResult(.syncFactors, .ok, "\(count(summary.syncFactors, "sync factor")), all valid P-256 keys")
        }
        let reason = "sync factor \(first.factorId) \(describe(first.problem))"
        return HealthResult(
            .syncFactors, .fail,
            "\(count(summary.badSyncFactors, "bad sync factor")) (\(reason)): that device cannot update the backup; "
                + "remove it and re-add the device")
    }

    /// Why a sync factor key is not the stored form (standard base64 of a 65-byte point), or nil.
    static func syncKeyProblem(_ key: String) -> String? { SyncFactorProblem.of(publicKey: key).map(describe) }

    static func describe(_ problem: SyncFactorProblem) -> String {
        switch problem {
        case .notKeypair(let tag): "is \(tag), not EC_KEYPAIR"
        case .notBase64: "has a key that is not standard base64"
        case .wrongLength(let n): "has a \(n)-byte key, not a 65-byte uncompressed point"
        case .notStoredForm: "has a key not in the stored form (padded standard base64)"
        case .notOnCurve: "has a key that is not a point on P-256"
        }
    }

    static func sealedBlob(_ size: Int?) -> HealthResult {
        guard let size else {
            return HealthResult(
                .sealedBlob, .fail,
                "no sealed blob is stored: the user cannot restore; re-import the backup with its DIR/<id>/backup file")
        }
        guard size <= BackupMetadata.maxBlobBytes else {
            return HealthResult(
                .sealedBlob, .fail, "the sealed blob has \(size) bytes, over the 15 MB the service allows")
        }
        guard size > 0 else { return HealthResult(.sealedBlob, .warn, "the sealed blob is empty") }
        return HealthResult(.sealedBlob, .ok, "\(size) bytes")
    }

    static func manifestHash(_ hash: String) -> HealthResult {
        manifestHash(malformed: BackupSummary.isWellFormedManifestHash(hash) ? nil : hash)
    }

    /// `malformed` is the hash when it is not 64 hex digits, `nil` when it is.
    static func manifestHash(malformed hash: String?) -> HealthResult {
        if let hash {
            return HealthResult(
                .manifestHash, .fail,
                "the manifest hash \"\(hash.prefix(16))\" is not 64 hex digits: clients will reject the metadata")
        }
        return HealthResult(.manifestHash, .ok, "64 hex digits")
    }

    static func count(_ n: Int, _ noun: String) -> String { n == 1 ? "1 \(noun)" : "\(n) \(noun)s" }

    /// A lookup key short enough for one line.
    static func abbreviate(_ key: String) -> String { key.count > 40 ? key.prefix(39) + "…" : key }

    static func abbreviateId(_ id: String) -> String {
        (try? BackupAccountID(id))?.abbreviated ?? String(id.prefix(40))
    }
}
