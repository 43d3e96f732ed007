import BackupModel

/// The Backup Service's JSON bodies for the four routes a console calls (reference:
/// `backup-service-api.md`), camelCase as the service writes them.
public enum BackupServiceWire {
    /// `GET /health`: `{"status":"ok","semver":"0.9.5","rev":null}`.
    public struct Health: Codable, Sendable, Equatable {
        public var status: String
        public var semver: String?
        public var rev: String?

        public init(status: String, semver: String?, rev: String?) {
            self.status = status
            self.semver = semver
            self.rev = rev
        }
    }

    /// `POST /v1/backup/status` request.
    public struct StatusRequest: Codable, Sendable {
        public var backupId: String
        public init(backupId: String) { self.backupId = backupId }
    }

    /// One main factor of a live backup, as `/v1/backup/status` lists it.
    public struct StatusFactor: Codable, Sendable, Equatable {
        /// `PASSKEY`, `OIDC_ACCOUNT` or `EC_KEYPAIR`.
        public var kind: String
        /// `GOOGLE` or `APPLE` for OIDC accounts, else `null`.
        public var accountKind: String?

        public init(kind: String, accountKind: String?) {
            self.kind = kind
            self.accountKind = accountKind
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(kind, forKey: .kind)
            try c.encode(accountKind, forKey: .accountKind)  // an explicit null, as the service writes it
        }
    }

    /// `POST /v1/backup/status` answer (main factors only).
    public struct StatusResponse: Codable, Sendable, Equatable {
        public var backupId: String
        public var factors: [StatusFactor]

        public init(backupId: String, factors: [StatusFactor]) {
            self.backupId = backupId
            self.factors = factors
        }
    }

    /// `POST /v1/reset/challenge/keypair` request.
    public struct ChallengeRequest: Codable, Sendable {
        public var backupAccountId: String
        public init(backupAccountId: String) { self.backupAccountId = backupAccountId }
    }

    /// `POST /v1/reset/challenge/keypair` answer: 32 random bytes (standard base64) and the opaque token.
    public struct ChallengeResponse: Codable, Sendable {
        public var challenge: String
        public var token: String
        public init(challenge: String, token: String) {
            self.challenge = challenge
            self.token = token
        }
    }

    /// `POST /v1/reset` request; the answer is `204` with no body.
    public struct ResetRequest: Codable, Sendable {
        public var backupAccountId: String
        public var signature: String
        public var challengeToken: String

        public init(backupAccountId: String, signature: String, challengeToken: String) {
            self.backupAccountId = backupAccountId
            self.signature = signature
            self.challengeToken = challengeToken
        }
    }

    /// The app's error envelope: `{"allowRetry": false, "error": {"code", "message"}}`.
    public struct ErrorEnvelope: Codable, Sendable, Equatable {
        public struct Body: Codable, Sendable, Equatable {
            public var code: String
            public var message: String
        }

        public var allowRetry: Bool
        public var error: Body

        public init(code: String, message: String) {
            allowRetry = false
            error = Body(code: code, message: message)
        }
    }

    /// `backup_account_` followed by 66 lowercase or uppercase hex digits: the shape the service's
    /// request types accept (anything else is the framework's 422).
    public static func isBackupAccountIdShape(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard utf8.count == BackupAccountID.prefix.utf8.count + 66, text.hasPrefix(BackupAccountID.prefix) else {
            return false
        }
        return utf8.dropFirst(BackupAccountID.prefix.utf8.count).allSatisfy { byte in
            (48...57).contains(byte) || (97...102).contains(byte) || (65...70).contains(byte)
        }
    }
}
