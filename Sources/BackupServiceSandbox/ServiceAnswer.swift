import BackupService
import Foundation

/// One answer of the sandbox service: status, content type, body; `drop` closes the connection
/// after the work is done instead of answering (a fault).
public struct ServiceAnswer: Sendable, Equatable {
    public var status: Int
    public var contentType: String?
    public var body: [UInt8]
    public var drop = false

    public init(status: Int, contentType: String?, body: [UInt8], drop: Bool = false) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.drop = drop
    }

    /// A JSON answer with sorted keys and unescaped slashes (serde_json leaves `/` alone).
    static func json(_ status: Int, _ value: some Encodable) -> ServiceAnswer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return ServiceAnswer(
            status: status, contentType: "application/json", body: Array((try? encoder.encode(value)) ?? Data()))
    }

    /// Pre-encoded JSON bytes.
    static func raw(_ status: Int, _ bytes: [UInt8]) -> ServiceAnswer {
        ServiceAnswer(status: status, contentType: "application/json", body: bytes)
    }

    static let noContent = ServiceAnswer(status: 204, contentType: nil, body: [])

    /// The framework's plain-text answers (415, 400, 422, 413, 404).
    static func plain(_ status: Int, _ text: String) -> ServiceAnswer {
        ServiceAnswer(status: status, contentType: "text/plain; charset=utf-8", body: Array(text.utf8))
    }

    /// The app's error envelope `{"allowRetry": false, "error": {"code", "message"}}`.
    static func error(_ status: Int, _ code: String, _ message: String) -> ServiceAnswer {
        json(status, BackupServiceWire.ErrorEnvelope(code: code, message: message))
    }
}

/// A refusal that ends a route early with its answer (the service's `ErrorResponse`).
struct Refusal: Error, Sendable {
    let answer: ServiceAnswer

    init(_ answer: ServiceAnswer) { self.answer = answer }

    static func bad(_ code: String, _ message: String) -> Refusal { Refusal(.error(400, code, message)) }

    // The service's shared error responses (BS: `src/types/error.rs`), word for word.
    static let internalError = Refusal(.error(500, "internal_server_error", "Internal server error"))
    static let notFound = Refusal(.error(404, "not_found", "Not Found"))
    static let jwt = bad("jwt_error", "Invalid or expired token.")
    static let unexpectedChallengeType = bad(
        "unexpected_challenge_type", "The challenge type does not match the expected type.")
    static let alreadyUsed = bad("already_used", "Token has already been used.")
    static let tokenNotFound = bad("token_not_found", "Token not found.")
    static let locked = Refusal(.error(423, "conflicting_lock", "Conflicting lock on resource"))
    static let tooManyFactors = Refusal(
        .error(409, "too_many_factors", "The maximum number of factors for this backup has been reached."))
    static let manifestMismatch = Refusal(
        .error(412, "manifest_hash_mismatch", "The manifest hash does not match the expected value."))
    static let backupNotFound = bad("backup_not_found", "Backup not found.")
    static let factorAlreadyExists = bad("factor_already_exists", "This factor already exists.")
    static let factorNotFound = bad("factor_not_found", "Factor not found.")
    static let encryptionKeyNotFound = bad("encryption_key_not_found", "Encryption key not found.")
    static let factorOrphaned = bad(
        "factor_orphaned_from_encryption_key", "Cannot remove encryption key as it would orphan an existing factor.")
    static let oneKeyPerType = bad(
        "only_one_encryption_key_per_type_allowed", "Only one encryption key per type is allowed.")
    static let syncFactorMustBeKeypair = bad("sync_factor_must_be_keypair", "Sync factor must be a keypair.")
    static let unauthorizedFactor = bad(
        "unauthorized_factor", "The provided factor is not authorized for this backup.")
    static let backupMissing = bad("backup_missing", "backup_missing")
    static let webauthnInvalidPayload = bad("webauthn_invalid_payload", "WebAuthN payload is invalid.")
    /// webauthn-rs's catch-all; the sandbox's stand-in ceremony answers every failure with it.
    static let webauthn = bad("webauthn_error", "Authentication failed with passkey. Please try again.")

    /// An `AuthError` whose message is `Client-side auth failure: <code>`.
    static func auth(_ code: String) -> Refusal { bad(code, "Client-side auth failure: \(code)") }

    /// `signature_verification_error` with the first 50 characters of the verifier's error.
    static func signature(_ detail: String) -> Refusal {
        bad("signature_verification_error", String(detail.prefix(50)))
    }
}
