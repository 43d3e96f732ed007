import BackupModel
import Foundation

/// The request and response bodies of the Turnkey calls the console makes (facts §6).
public enum TurnkeyWire {
    public static let listSubOrgsPath = "/public/v1/query/list_suborgs"
    public static let listUsersPath = "/public/v1/query/list_users"
    public static let getActivityPath = "/public/v1/query/get_activity"
    public static let whoamiPath = "/public/v1/query/whoami"
    public static let deleteSubOrganizationPath = "/public/v1/submit/delete_sub_organization"
    public static let deleteActivityType = "ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION"
    /// Turnkey's page size for `list_suborgs`, sent as a string.
    public static let pageLimit = "100"

    public struct OrganizationQuery: Codable, Sendable, Equatable {
        public var organizationId: String
        public init(organizationId: String) { self.organizationId = organizationId }
    }

    public struct PaginationOptions: Codable, Sendable, Equatable {
        public var limit: String?
        public var after: String?
        public init(limit: String?, after: String?) {
            self.limit = limit
            self.after = after
        }
    }

    public struct ListSubOrgsRequest: Codable, Sendable, Equatable {
        public var organizationId: String
        public var paginationOptions: PaginationOptions?
        public init(organizationId: String, paginationOptions: PaginationOptions?) {
            self.organizationId = organizationId
            self.paginationOptions = paginationOptions
        }
    }

    public struct ListSubOrgsResponse: Codable, Sendable, Equatable {
        public var organizationIds: [String]
        public init(organizationIds: [String]) { self.organizationIds = organizationIds }
    }

    public struct GetActivityRequest: Codable, Sendable, Equatable {
        public var organizationId: String
        public var activityId: String
        public init(organizationId: String, activityId: String) {
            self.organizationId = organizationId
            self.activityId = activityId
        }
    }

    public struct WhoamiResponse: Codable, Sendable, Equatable {
        public var organizationId: String
        public var organizationName: String?
        public var userId: String?
        public var username: String?
        public init(organizationId: String, organizationName: String?, userId: String?, username: String?) {
            self.organizationId = organizationId
            self.organizationName = organizationName
            self.userId = userId
            self.username = username
        }
    }

    public struct APIKey: Codable, Sendable, Equatable {
        public struct Credential: Codable, Sendable, Equatable {
            public var publicKey: String
            public var type: String
            public init(publicKey: String, type: String) {
                self.publicKey = publicKey
                self.type = type
            }
        }

        public var apiKeyId: String
        public var apiKeyName: String
        public var credential: Credential
        public init(apiKeyId: String, apiKeyName: String, credential: Credential) {
            self.apiKeyId = apiKeyId
            self.apiKeyName = apiKeyName
            self.credential = credential
        }
    }

    public struct User: Codable, Sendable, Equatable {
        public var userId: String
        public var userName: String
        public var apiKeys: [APIKey]
        /// The user's passkeys (absent in answers that leave them out).
        public var authenticators: [Authenticator]?
        /// The user's OIDC providers (absent in answers that leave them out).
        public var oauthProviders: [OAuthProvider]?
        public init(
            userId: String, userName: String, apiKeys: [APIKey], authenticators: [Authenticator]? = nil,
            oauthProviders: [OAuthProvider]? = nil
        ) {
            self.userId = userId
            self.userName = userName
            self.apiKeys = apiKeys
            self.authenticators = authenticators
            self.oauthProviders = oauthProviders
        }
    }

    /// A WebAuthn authenticator of a user (`credentialId` base64url).
    public struct Authenticator: Codable, Sendable, Equatable {
        public var authenticatorId: String
        public var authenticatorName: String
        public var credentialId: String
        public init(authenticatorId: String, authenticatorName: String, credentialId: String) {
            self.authenticatorId = authenticatorId
            self.authenticatorName = authenticatorName
            self.credentialId = credentialId
        }
    }

    /// An OIDC provider of a user: the provider id the backup's OIDC factor names, and the account.
    public struct OAuthProvider: Codable, Sendable, Equatable {
        public var providerId: String
        public var providerName: String
        public var issuer: String
        public var audience: String
        public var subject: String
        public init(providerId: String, providerName: String, issuer: String, audience: String, subject: String) {
            self.providerId = providerId
            self.providerName = providerName
            self.issuer = issuer
            self.audience = audience
            self.subject = subject
        }
    }

    public struct ListUsersResponse: Codable, Sendable, Equatable {
        public var users: [User]
        public init(users: [User]) { self.users = users }
    }

    /// An activity as Turnkey returns it; `result` and `failure` are kept as loose JSON.
    public struct Activity: Codable, Sendable, Equatable {
        public var id: String
        public var organizationId: String
        public var status: String
        public var type: String
        public var fingerprint: String
        public var failure: Failure?
        /// The activity's result (`{"createSubOrganizationResultV7": {…}}` and the like), when it has one.
        public var result: JSONValue?
        public init(
            id: String, organizationId: String, status: String, type: String, fingerprint: String, failure: Failure?,
            result: JSONValue? = nil
        ) {
            self.id = id
            self.organizationId = organizationId
            self.status = status
            self.type = type
            self.fingerprint = fingerprint
            self.failure = failure
            self.result = result
        }
    }

    public struct Failure: Codable, Sendable, Equatable {
        public var code: Int?
        public var message: String?
        public init(code: Int?, message: String?) {
            self.code = code
            self.message = message
        }
    }

    public struct ActivityResponse: Codable, Sendable, Equatable {
        public var activity: Activity
        public init(activity: Activity) { self.activity = activity }
    }

    /// Compact JSON with sorted keys: deterministic bytes for query bodies.
    public static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? Array(encoder.encode(value))) ?? []
    }

    /// Decodes an answer; `nil` when the body is not that JSON.
    public static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) -> T? {
        try? JSONDecoder().decode(type, from: Data(bytes))
    }
}

extension TurnkeyWire {
    /// A fast path for the `list_suborgs` answer: exactly `{"organizationIds": ["…", …]}` (any
    /// whitespace, strings without escapes). Anything else is `nil`, and the caller decodes it
    /// with `JSONDecoder`; ten thousand pages should not pay for the general decoder.
    public static func organizationIds(_ bytes: [UInt8]) -> [String]? {
        var i = 0
        func skipSpace() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0a || bytes[i] == 0x0d || bytes[i] == 0x09 {
                i += 1
            }
        }
        func expect(_ byte: UInt8) -> Bool {
            skipSpace()
            guard i < bytes.count, bytes[i] == byte else { return false }
            i += 1
            return true
        }
        func string() -> String? {
            guard expect(0x22) else { return nil }
            let start = i
            while i < bytes.count, bytes[i] != 0x22 {
                guard bytes[i] != 0x5c, bytes[i] >= 0x20 else { return nil }
                i += 1
            }
            guard i < bytes.count else { return nil }
            defer { i += 1 }
            return String(decoding: bytes[start..<i], as: UTF8.self)
        }
        guard expect(0x7b), string() == "organizationIds", expect(0x3a), expect(0x5b) else { return nil }
        var ids: [String] = []
        skipSpace()
        if i < bytes.count, bytes[i] == 0x5d {
            i += 1
        } else {
            while true {
                guard let id = string() else { return nil }
                ids.append(id)
                if expect(0x2c) { continue }
                guard expect(0x5d) else { return nil }
                break
            }
        }
        guard expect(0x7d) else { return nil }
        skipSpace()
        return i == bytes.count ? ids : nil
    }
}

/// `ACTIVITY_STATUS_*` values.
public enum TurnkeyActivityStatus {
    public static let created = "ACTIVITY_STATUS_CREATED"
    public static let pending = "ACTIVITY_STATUS_PENDING"
    public static let completed = "ACTIVITY_STATUS_COMPLETED"
    public static let failed = "ACTIVITY_STATUS_FAILED"
    public static let consensusNeeded = "ACTIVITY_STATUS_CONSENSUS_NEEDED"
    public static let rejected = "ACTIVITY_STATUS_REJECTED"
}
