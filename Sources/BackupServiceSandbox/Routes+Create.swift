import BackupCrypto
import BackupModel
import Foundation
import SandboxIdentity

extension BackupServiceEmulator {
    /// The multipart routes' first step: the `Content-Length` limit, the form, the `payload` and
    /// `backup` fields, and the blob's size.
    func form<T: ServiceRequest>(_ type: T.Type, _ call: Call) throws(Refusal) -> (payload: T, blob: [UInt8]) {
        guard call.request.body.count <= Self.maxRequestBytes else {
            throw Refusal(
                .error(413, "content_too_large", "Request body of \(call.request.body.count) bytes is too large."))
        }
        let fields: [String: [UInt8]]
        switch Multipart.parse(contentType: call.request.contentType, body: call.request.body) {
        case .success(let parsed): fields = parsed
        case .failure(.notMultipart):
            throw Refusal(.plain(400, "Invalid `boundary` for `multipart/form-data` request"))
        case .failure(.malformed):
            throw .bad("multipart_error", "Failed to read multipart form data.")
        }
        guard let payloadBytes = fields["payload"] else {
            throw .bad("missing_payload_field", "Missing payload field in multipart data")
        }
        // serde_json::from_slice: any parse or shape failure is `invalid_payload` here.
        guard let value = FastJSON.parse(payloadBytes), let object = try? Fields(value), let payload = try? T(object)
        else {
            throw .bad("invalid_payload", "Failed to deserialize payload")
        }
        guard let blob = fields["backup"] else {
            throw .bad("missing_backup_field", "Missing backup field in multipart data")
        }
        guard !blob.isEmpty else { throw .bad("empty_backup_file", "Empty backup file") }
        guard blob.count <= Self.maxBlobBytes else {
            throw Refusal(.error(413, "content_too_large", "Backup file exceeds maximum allowed size."))
        }
        return (payload, blob)
    }

    /// `POST /v1/create` (BS: `create_backup.rs`): both factors validated (each burns its
    /// token), the `crate_backup_lock:` lock (423), the id must be new (HEAD of the blob), both
    /// lookup rows inserted, then the blob and the metadata put with `If-None-Match: *`; if S3
    /// fails, the rows are deleted again.
    func create(_ call: Call) throws(Refusal) -> Answer {
        let storage = try store()
        let (request, blob) = try form(ServiceRequests.Create.self, call)
        let main = try validateRegistration(
            request.authorization, token: request.challengeToken, context: ChallengeContext.create,
            turnkeyProviderId: request.turnkeyProviderId, isSyncFactor: false, call)
        let sync = try validateRegistration(
            request.initialSyncFactor, token: request.initialSyncChallengeToken, context: ChallengeContext.create,
            turnkeyProviderId: nil, isSyncFactor: true, call)
        let backupId = request.backupAccountId
        // The reference names the `crate_backup_lock:` lock but not its step; taken here, after
        // the tokens burned, around everything that writes (as sync's is).
        return try locks.holding(ServiceLocks.createPrefix, backupId, now: call.now) { () throws(Refusal) -> Answer in
            try createLocked(backupId: backupId, request: request, blob: blob, main: main, sync: sync, storage, call)
        }
    }

    private func createLocked(
        backupId: String, request: ServiceRequests.Create, blob: [UInt8], main: Registration, sync: Registration,
        _ storage: ServiceStorage, _ call: Call
    ) throws(Refusal) -> Answer {
        guard storage.getBlob(backupId) == nil else {
            throw Refusal(
                .error(409, "backup_account_id_already_exists", "Backup ID already exists. Please `/sync` instead."))
        }
        let metadata = BackupMetadata(
            id: backupId, manifestHash: request.manifestHash, factors: [main.factor],
            syncFactors: [sync.factor], keys: [request.initialEncryptionKey])
        let mainKey = FactorLookupKey(scope: .main, factor: main.lookup).rawValue
        let syncKey = FactorLookupKey(scope: .sync, factor: sync.lookup).rawValue
        guard
            try io({ () throws(ConsoleError) in
                try storage.insertLookup(mainKey, backupId: backupId, nowMillis: call.nowMillis)
            })
        else { throw .factorAlreadyExists }
        guard
            try io({ () throws(ConsoleError) in
                try storage.insertLookup(syncKey, backupId: backupId, nowMillis: call.nowMillis)
            })
        else { throw .factorAlreadyExists }
        let stored = try io { () throws(ConsoleError) -> Bool in
            guard try storage.putBlob(backupId, blob, ifNoneMatch: true) else { return false }
            return try storage.putMetadata(metadata, ifNoneMatch: true)
        }
        guard stored else {
            try io { () throws(ConsoleError) in
                try storage.deleteLookup(mainKey)
                try storage.deleteLookup(syncKey)
            }
            throw .internalError
        }
        return exportedAnswer(["backupId": .string(backupId)], metadataKey: "backupMetadata", metadata)
    }

    /// A JSON object of `members` plus the exported metadata under `metadataKey`.
    func exportedAnswer(_ members: [String: JSONValue], metadataKey: String, _ metadata: BackupMetadata) -> Answer {
        var object = members
        object[metadataKey] = Self.exported(metadata)
        return .raw(200, SortedJSON.bytes(.object(object)))
    }

    /// `ExportedBackupMetadata` as a JSON value (passkeys as `credentialId`, times as seconds,
    /// no OIDC `sub`).
    static func exported(_ metadata: BackupMetadata) -> JSONValue {
        FastJSON.parse(Array(metadata.encoded(.exported))) ?? .null
    }
}
