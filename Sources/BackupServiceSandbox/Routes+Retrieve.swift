import BackupCrypto
import BackupModel
import Foundation
import SandboxIdentity

extension BackupServiceEmulator {
    /// `POST /v1/retrieve/from-challenge` (attestation; MAIN scope): the blob, the exported
    /// metadata, and a new sync-factor token (15 minutes, single use) for `/add-sync-factor`.
    func retrieveFromChallenge(_ call: Call) throws(Refusal) -> Answer {
        try attest(call)
        let storage = try store()
        let request = try json(ServiceRequests.Authorized.self, call)
        let (backupId, metadata, _) = try verify(
            request.authorization, scope: .main, context: ChallengeContext.retrieve, token: request.challengeToken, call
        )
        guard let blob = storage.getBlob(backupId) else { throw .internalError }
        let token = Base64.encode(random.bytes(32), alphabet: .url, padding: false)
        storage.createSyncFactorToken(
            hash: SHA256.hex(Array(token.utf8)), backupId: metadata.id, now: call.now, ttl: Self.tokenLifetimeSeconds)
        return exportedAnswer(
            ["backup": .string(Base64.encode(blob)), "syncFactorToken": .string(token)], metadataKey: "metadata",
            metadata)
    }

    /// `POST /v1/verify-factor` (attestation; MAIN scope): `{"backupId"}`.
    func verifyFactor(_ call: Call) throws(Refusal) -> Answer {
        try attest(call)
        let request = try json(ServiceRequests.Authorized.self, call)
        let (backupId, _, _) = try verify(
            request.authorization, scope: .main, context: ChallengeContext.verifyFactor, token: request.challengeToken,
            call)
        return .json(200, ["backupId": backupId])
    }

    /// `POST /v1/retrieve-metadata` (SYNC scope): the bare exported metadata. With a `backupId`,
    /// an untraceable factor is told apart: the backup exists (`unauthorized_factor`, the device
    /// lost its authorization) or not (`backup_does_not_exist`); a different backup is
    /// `backup_id_mismatch`.
    func retrieveMetadata(_ call: Call) throws(Refusal) -> Answer {
        let storage = try store()
        let request = try json(ServiceRequests.RetrieveMetadata.self, call)
        let found: (backupId: String, metadata: BackupMetadata, etag: Int)
        do {
            found = try verify(
                request.authorization, scope: .sync, context: ChallengeContext.retrieveMetadata,
                token: request.challengeToken, call)
        } catch {
            if let expected = request.backupId, Self.code(of: error) == "backup_untraceable" {
                throw storage.getBlob(expected) != nil ? .unauthorizedFactor : .auth("backup_does_not_exist")
            }
            throw error
        }
        if let expected = request.backupId, expected != found.backupId { throw .auth("backup_id_mismatch") }
        return .raw(200, SortedJSON.bytes(Self.exported(found.metadata)))
    }

    /// The error code inside a refusal's envelope.
    static func code(of refusal: Refusal) -> String? {
        (try? JSONDecoder().decode(BackupServiceWireEnvelope.self, from: Data(refusal.answer.body)))?.error.code
    }

    struct BackupServiceWireEnvelope: Decodable {
        struct Body: Decodable { var code: String }
        var error: Body
    }

    /// `POST /v1/add-sync-factor` (BS: `add_sync_factor.rs`): the new keypair is validated (its
    /// token burned), the sync-factor token is used, the SYNC row inserted, then the metadata
    /// updated; a write that definitely did not land rolls the row and the token back.
    func addSyncFactor(_ call: Call) throws(Refusal) -> Answer {
        let storage = try store()
        let request = try json(ServiceRequests.AddSyncFactor.self, call)
        let registration = try validateRegistration(
            request.syncFactor, token: request.challengeToken, context: ChallengeContext.addSyncFactor,
            turnkeyProviderId: nil, isSyncFactor: true, call)
        let tokenHash = SHA256.hex(Array(request.syncFactorToken.utf8))
        let backupId: String
        switch storage.useSyncFactorToken(hash: tokenHash, now: call.now) {
        case .notFound: throw .tokenNotFound
        case .alreadyUsed: throw .alreadyUsed
        case .used(let id): backupId = id
        }
        let pk = FactorLookupKey(scope: .sync, factor: registration.lookup).rawValue
        guard
            try io({ () throws(ConsoleError) in
                try storage.insertLookup(pk, backupId: backupId, nowMillis: call.nowMillis)
            })
        else { throw .factorAlreadyExists }
        let outcome = addFactorToMetadata(
            backupId: backupId, factor: registration.factor, scope: .sync, key: nil, storage)
        if case .notInserted(let refusal) = outcome {
            try io { () throws(ConsoleError) in try storage.deleteLookup(pk) }
            _ = storage.unuseSyncFactorToken(hash: tokenHash, now: call.now)
            throw refusal
        }
        if case .unknown(let refusal) = outcome { throw refusal }
        return .json(200, ["backupId": backupId])
    }

    /// What a metadata write that adds a factor came to (`FactorMetadataWrite`).
    enum FactorWrite {
        case inserted(BackupMetadata)
        /// Definitely not written: the caller rolls its lookup row back.
        case notInserted(Refusal)
        /// Maybe written, or the factor is already there: the row stays.
        case unknown(Refusal)
    }

    /// `BackupStorage::add_factor` / `add_sync_factor`: read, duplicate check (same scope is
    /// `unknown`, the other scope `notInserted`), the limit, the key (one per kind), then the
    /// put with `If-Match`.
    func addFactorToMetadata(
        backupId: String, factor: Factor, scope: FactorScope, key: EncryptionKey?, _ storage: ServiceStorage
    ) -> FactorWrite {
        if scope == .sync {
            guard case .ecKeypair = factor.kind else { return .notInserted(.syncFactorMustBeKeypair) }
        }
        guard let current = storage.getMetadata(backupId) else { return .notInserted(.backupNotFound) }
        var metadata = current.metadata
        let inTarget = (scope == .main ? metadata.factors : metadata.syncFactors).contains { $0.kind == factor.kind }
        let inOther = (scope == .main ? metadata.syncFactors : metadata.factors).contains { $0.kind == factor.kind }
        if inTarget { return .unknown(.factorAlreadyExists) }
        if inOther { return .notInserted(.factorAlreadyExists) }
        if scope == .main {
            guard metadata.factors.count < BackupMetadata.maxMainFactors else { return .notInserted(.tooManyFactors) }
            metadata.factors.append(factor)
            if let key {
                guard !metadata.keys.contains(where: { $0.tag == key.tag }) else { return .notInserted(.oneKeyPerType) }
                metadata.keys.append(key)
            }
        } else {
            guard metadata.syncFactors.count < BackupMetadata.maxSyncFactors else {
                return .notInserted(.tooManyFactors)
            }
            metadata.syncFactors.append(factor)
        }
        do {
            guard try storage.putMetadata(metadata, ifMatch: current.etag) else { return .unknown(.internalError) }
        } catch {
            return .unknown(.internalError)
        }
        return .inserted(metadata)
    }
}
