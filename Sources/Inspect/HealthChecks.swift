import BackupCrypto
import BackupModel

/// The health checks: pure functions of a ``HealthInput``, one result per ``HealthCheckName``
/// in that enum's order, whatever the input.
public enum HealthChecks {
    /// Runs every check.
    public static func run(_ input: HealthInput) -> [HealthResult] {
        let expected = input.metadata.lookupKeys.map(\.rawValue)
        let rows = Set(input.indexRows)
        let missing = expected.filter { !rows.contains($0) }
        return [
            lookupRowsMissing(missing.filter { input.otherOwners[$0] == nil }, input.metadata),
            lookupRowsUnauthorized(input.indexRows.filter { !Set(expected).contains($0) }),
            factorShared(missing.compactMap { key in input.otherOwners[key].map { (key, $0) } }),
            factorKeys(input.metadata), orphanKeys(input.metadata), oidcWithoutPasskey(input.metadata),
            factorLimits(input.metadata), syncFactors(input.metadata), sealedBlob(input.blobSize),
            manifestHash(input.metadata.manifestHash),
        ]
    }

    static func lookupRowsMissing(_ missing: [String], _ metadata: BackupMetadata) -> HealthResult {
        let unindexable = metadata.factors.filter { $0.lookupKey(scope: .main) == nil }.count
        if !missing.isEmpty {
            return HealthResult(
                .lookupRowsMissing, .fail,
                "\(count(missing.count, "factor")) of the metadata \(missing.count == 1 ? "has" : "have") no index row "
                    + "(first \(abbreviate(missing[0]))): the user cannot find this backup with it; re-import the "
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

    static func factorShared(_ shared: [(String, String)]) -> HealthResult {
        guard let (key, other) = shared.first else {
            return HealthResult(.factorShared, .ok, "no factor is indexed to another backup")
        }
        return HealthResult(
            .factorShared, .fail,
            "\(count(shared.count, "factor")) (first \(abbreviate(key))) \(shared.count == 1 ? "is" : "are") indexed "
                + "to backup \(abbreviateId(other)): the factor is enrolled in two backups and opens the other one")
    }

    /// Factor and key counts by kind: passkey ↔ PRF, keychain keypair ↔ ICLOUD, OIDC ↔ TURNKEY.
    struct KindCounts {
        var passkeys = 0, keychains = 0, oidc = 0, prf = 0, icloud = 0, turnkey = 0

        init(_ metadata: BackupMetadata) {
            for factor in metadata.factors {
                switch factor.kind {
                case .passkey: passkeys += 1
                case .ecKeypair: keychains += 1
                case .oidcAccount: oidc += 1
                }
            }
            for key in metadata.keys {
                switch key {
                case .prf: prf += 1
                case .icloud: icloud += 1
                case .turnkey: turnkey += 1
                }
            }
        }

        /// (factors, keys, factor noun, key tag) per pairing.
        var pairs: [(Int, Int, String, String)] {
            [(passkeys, prf, "passkey", "PRF"), (keychains, icloud, "keychain keypair", "ICLOUD"),
             (oidc, turnkey, "OIDC factor", "TURNKEY")]
        }
    }

    static func factorKeys(_ metadata: BackupMetadata) -> HealthResult {
        let gaps = KindCounts(metadata).pairs.filter { $0.0 > $0.1 }
        guard !gaps.isEmpty else {
            return HealthResult(.factorKeys, .ok, "every main factor has its encryption key")
        }
        let text = gaps.map { "\($0.0) \($0.2)(s) but \($0.1) \($0.3) key(s)" }.joined(separator: ", ")
        return HealthResult(
            .factorKeys, .fail,
            "\(text): a factor without its key cannot decrypt the backup; the user must re-add that factor")
    }

    static func orphanKeys(_ metadata: BackupMetadata) -> HealthResult {
        let extra = KindCounts(metadata).pairs.filter { $0.1 > $0.0 }
        guard !extra.isEmpty else {
            return HealthResult(.orphanKeys, .ok, "every encryption key has its factor")
        }
        let text = extra.map { "\($0.1) \($0.3) key(s) for \($0.0) \($0.2)(s)" }.joined(separator: ", ")
        return HealthResult(
            .orphanKeys, .warn, "\(text): a key without its factor is left over from a removal that did not finish")
    }

    static func oidcWithoutPasskey(_ metadata: BackupMetadata) -> HealthResult {
        let counts = KindCounts(metadata)
        guard counts.oidc > 0, counts.passkeys == 0 else {
            return HealthResult(.oidcWithoutPasskey, .ok, "no OIDC factor stands without a passkey")
        }
        return HealthResult(
            .oidcWithoutPasskey, .warn,
            "OIDC factor without a passkey: the app cannot manage this state; the user should add a passkey "
                + "after opening the backup with the OIDC account")
    }

    static func factorLimits(_ metadata: BackupMetadata) -> HealthResult {
        let main = metadata.factors.count
        let sync = metadata.syncFactors.count
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

    static func syncFactors(_ metadata: BackupMetadata) -> HealthResult {
        var bad = 0
        var reason = ""
        for factor in metadata.syncFactors {
            let problem: String?
            if case .ecKeypair(let key) = factor.kind {
                problem = syncKeyProblem(key)
            } else {
                problem = "is \(factor.kind.tag), not EC_KEYPAIR"
            }
            if let problem {
                if bad == 0 { reason = "sync factor \(factor.id) \(problem)" }
                bad += 1
            }
        }
        guard bad > 0 else {
            return HealthResult(.syncFactors, .ok, "\(count(metadata.syncFactors.count, "sync factor")), all valid P-256 keys")
        }
        return HealthResult(
            .syncFactors, .fail,
            "\(count(bad, "bad sync factor")) (\(reason)): that device cannot update the backup; remove it and re-add the device")
    }

    /// Why a sync factor key is not the stored form (standard base64 of a 65-byte point), or nil.
    static func syncKeyProblem(_ key: String) -> String? {
        guard let bytes = Base64.decode(key, alphabet: .standard) else { return "has a key that is not standard base64" }
        guard bytes.count == 65, bytes[0] == 0x04 else {
            return "has a \(bytes.count)-byte key, not a 65-byte uncompressed point"
        }
        guard Base64.encode(bytes) == key else { return "has a key not in the stored form (padded standard base64)" }
        guard P256.isValidPublicKey(bytes) else { return "has a key that is not a point on P-256" }
        return nil
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
        guard hash.utf8.count == 64, Hex.isHex(hash) else {
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
