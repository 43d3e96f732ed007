import Access
import BackupModel
import BackupService
import Recovery

/// `reset begin BACKUP_ACCOUNT_ID`: the live backup's factors, a challenge and its token.
///
/// The token is a bearer credential: it travels in this answer only (the client prints it or
/// writes `--token-out`); the audit keeps a prefix of its hash.
public struct ResetBeginOperation: ConsoleOperation {
    public static let name = "reset.begin"
    public var backupAccountId: String

    public init(backupAccountId: String) { self.backupAccountId = backupAccountId }

    public struct Output: Codable, Sendable, Equatable, CustomStringConvertible {
        public var backupId: String
        /// The challenge, standard base64.
        public var challenge: String
        /// The single-use token (secret: shown once, never logged).
        public var token: String
        /// Unix seconds (RFC 3339 on the wire).
        @UTCSeconds public var expiresAt: Int64
        /// The live backup's main factors, as `/v1/backup/status` listed them.
        public var factors: [BackupServiceWire.StatusFactor]

        public init(_ begun: ResetChallenge) {
            backupId = begun.backupId.rawValue
            challenge = begun.challengeBase64
            token = begun.token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            expiresAt = begun.expiresAt
            factors = begun.factors
        }

        /// The answer as the walkthrough holds it (the token back in ``SecretBytes``).
        public func resetChallenge() throws(ConsoleError) -> ResetChallenge {
            guard let bytes = Base64.decode(challenge, alphabet: .standard) else {
                throw .internalError("The reset challenge of \(backupId) is not base64.")
            }
            return ResetChallenge(
                backupId: try BackupAccountID(backupId), challenge: bytes, token: SecretBytes(Array(token.utf8)),
                expiresAt: expiresAt, factors: factors)
        }

        public var expiresAtRFC3339: String { Timestamp.format(expiresAt) }

        /// Never the token.
        public var description: String { "ResetBeginOperation.Output(backupId: \(backupId), token: <redacted>)" }
    }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let session = try await context.session()
        let service = try await context.resetService(session)
        return Output(try await service.begin(backupAccountId: backupAccountId, session: session))
    }
}

/// The backup a reset token is for, checked against this console's ledger; nothing is sent
/// or written. `reset complete` asks it before it reads the signature and confirms.
public struct ResetPlanOperation: ConsoleOperation, CustomStringConvertible {
    public static let name = "reset.plan"
    public var token: String
    public var backupAccountId: String?

    public init(token: SecretBytes, backupAccountId: String?) {
        self.token = token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        self.backupAccountId = backupAccountId
    }

    public struct Output: Codable, Sendable, Equatable {
        /// The tenant the reset happens in (what a terminal confirmation asks to type).
        public var tenant: String
        public var backupId: String
        /// Whether this console issued the token.
        public var fromLedger: Bool
        /// Whether it was sent before without the outcome being recorded.
        public var sentBefore: Bool

        public init(tenant: String, backupId: String, fromLedger: Bool, sentBefore: Bool) {
            self.tenant = tenant
            self.backupId = backupId
            self.fromLedger = fromLedger
            self.sentBefore = sentBefore
        }
    }

    public var description: String { "ResetPlanOperation(token: <redacted>)" }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let session = try await context.session()
        let service = try await context.resetService(session)
        let plan = try await service.plan(
            token: SecretBytes(Array(token.utf8)), backupAccountId: backupAccountId, session: session)
        return Output(
            tenant: session.tenantName.rawValue, backupId: plan.backupId, fromLedger: plan.fromLedger,
            sentBefore: plan.sentBefore)
    }
}

/// `reset complete`: sends the user's signature to the Backup Service's `/v1/reset` and, on
/// success only, wipes the console's copy and queues the sub-orgs.
public struct ResetCompleteOperation: ConsoleOperation, CustomStringConvertible {
    public static let name = "reset.complete"
    public var token: String
    public var signature: String
    public var backupAccountId: String?

    public init(token: SecretBytes, signature: String, backupAccountId: String?) {
        self.token = token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        self.signature = signature
        self.backupAccountId = backupAccountId
    }

    public var description: String { "ResetCompleteOperation(token: <redacted>, signature: <redacted>)" }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> ResetResult {
        let session = try await context.session()
        let service = try await context.resetService(session)
        return try await service.complete(
            token: SecretBytes(Array(token.utf8)), signature: signature, backupAccountId: backupAccountId,
            session: session)
    }
}
