import BackupCrypto
import BackupModel
import BackupService
import Foundation

extension BackupServiceEmulator {
    /// `POST /v1/sync` (BS: `sync_backup.rs`): the form, then auth (the token burns here, so a
    /// later 412 still spends it), the `sync_backup_lock:` lock (423), the metadata, the manifest
    /// gate, the blob (unconditional), then the metadata with `If-Match`.
    func sync(_ call: Call) throws(Refusal) -> Answer {
        let storage = try store()
        let (request, blob) = try form(ServiceRequests.Sync.self, call)
        let (backupId, _, _) = try verify(
            request.authorization, scope: .sync, context: ChallengeContext.sync, token: request.challengeToken, call)
        // 3. The lock, after the token burned.
        return try locks.holding(ServiceLocks.syncPrefix, backupId, now: call.now) { () throws(Refusal) -> Answer in
            guard let current = storage.getMetadata(backupId) else { throw .backupNotFound }
            var metadata = current.metadata
            guard metadata.manifestHash == request.currentManifestHash else { throw .manifestMismatch }
            metadata.manifestHash = request.newManifestHash
            let stored = try io { () throws(ConsoleError) -> Bool in
                _ = try storage.putBlob(backupId, blob)
                return try storage.putMetadata(metadata, ifMatch: current.etag)
            }
            guard stored else { throw .internalError }
            return .json(200, ["backupId": backupId])
        }
    }

    /// `POST /v1/delete-backup` (SYNC scope): blob, metadata, then every FactorLookup row; `204`.
    func deleteBackup(_ call: Call) throws(Refusal) -> Answer {
        let storage = try store()
        let request = try json(ServiceRequests.Authorized.self, call)
        let (backupId, _, _) = try verify(
            request.authorization, scope: .sync, context: ChallengeContext.deleteBackup, token: request.challengeToken,
            call)
        try io { () throws(ConsoleError) in
            try storage.deleteBlob(backupId)
            try storage.deleteMetadata(backupId)
        }
        try call.failIf("lookup-delete")
        try io { () throws(ConsoleError) in
            for pk in storage.lookupKeys(backupId: backupId) { try storage.deleteLookup(pk) }
        }
        return .noContent
    }

    /// `POST /v1/backup/status {"backupId"}` (public): the main factors' kinds; 404 without metadata.
    func status(_ call: Call) async throws(Refusal) -> Answer {
        let request = try json(ServiceRequests.Status.self, call)
        let metadata: BackupMetadata?
        do {
            metadata = try await backend.metadata(backupId: request.backupId)
        } catch {
            throw .internalError
        }
        guard let metadata else { throw .notFound }
        let factors = metadata.factors.map { factor -> BackupServiceWire.StatusFactor in
            switch factor.kind {
            case .passkey: BackupServiceWire.StatusFactor(kind: "PASSKEY", accountKind: nil)
            case .oidcAccount(let o):
                BackupServiceWire.StatusFactor(kind: "OIDC_ACCOUNT", accountKind: o.provider.rawValue)
            case .ecKeypair: BackupServiceWire.StatusFactor(kind: "EC_KEYPAIR", accountKind: nil)
            }
        }
        return .json(200, BackupServiceWire.StatusResponse(backupId: request.backupId, factors: factors))
    }
}
