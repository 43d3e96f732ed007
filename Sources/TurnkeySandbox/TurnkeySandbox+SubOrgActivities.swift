import BackupCrypto
import BackupModel
import Foundation
import SandboxIdentity

extension TurnkeySandbox {
    /// An activity inside sub-org `org` whose caller may submit it: its effect and result.
    func apply(type: String, org: String, _ parameters: [String: JSONValue], fingerprint: String) throws -> JSONValue {
        guard var sub = details[org] else { throw BadRequest(message: "organization \(org) has no users to change") }
        defer { details[org] = sub }
        func index(of userId: String?) throws -> Int {
            guard let userId, let index = sub.users.firstIndex(where: { $0.userId == userId }) else {
                throw BadRequest(message: "user not found: \(userId ?? "none")", status: 404, code: "NOT_FOUND")
            }
            return index
        }
        func ids(_ values: [String]) -> JSONValue { .array(values.map { .string($0) }) }
        switch type {
        case "ACTIVITY_TYPE_CREATE_USERS_V3":
            guard case .array(let users)? = parameters["users"], !users.isEmpty else {
                throw BadRequest(message: "users is required")
            }
            var made: [String] = []
            for (position, user) in users.enumerated() {
                let member = try member(user, id: Self.uuid(from: "\(fingerprint)|user|\(position)"))
                guard !sub.users.contains(where: { $0.userName == member.userName }) else {
                    throw BadRequest(message: "a user named \(member.userName) already exists")
                }
                sub.users.append(member)
                made.append(member.userId)
            }
            return .object(["createUsersResult": .object(["userIds": ids(made)])])
        case "ACTIVITY_TYPE_CREATE_POLICIES":
            guard case .array(let policies)? = parameters["policies"], !policies.isEmpty else {
                throw BadRequest(message: "policies is required")
            }
            var made: [String] = []
            for (position, policy) in policies.enumerated() {
                guard let name = policy["policyName"]?.stringValue, let effect = policy["effect"]?.stringValue,
                    ["EFFECT_ALLOW", "EFFECT_DENY"].contains(effect), let condition = policy["condition"]?.stringValue,
                    let consensus = policy["consensus"]?.stringValue
                else { throw BadRequest(message: "a policy needs policyName, effect, condition and consensus") }
                let id = Self.uuid(from: "\(fingerprint)|policy|\(position)")
                sub.policies.append(
                    SandboxSubOrg.Policy(
                        policyId: id, policyName: name, effect: effect, consensus: consensus, condition: condition))
                made.append(id)
            }
            return .object(["createPoliciesResult": .object(["policyIds": ids(made)])])
        case "ACTIVITY_TYPE_CREATE_API_KEYS_V2":
            let user = try index(of: parameters["userId"]?.stringValue)
            guard case .array(let keys)? = parameters["apiKeys"], !keys.isEmpty else {
                throw BadRequest(message: "apiKeys is required")
            }
            let made = try keys.enumerated().map { try apiKey($1, id: Self.uuid(from: "\(fingerprint)|key|\($0)")) }
            sub.users[user].apiKeys += made
            return .object(["createApiKeysResult": .object(["apiKeyIds": ids(made.map(\.apiKeyId))])])
        case "ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS":
            let user = try index(of: parameters["userId"]?.stringValue)
            guard case .array(let providers)? = parameters["oauthProviders"], !providers.isEmpty else {
                throw BadRequest(message: "oauthProviders is required")
            }
            let userId = sub.users[user].userId
            let made = try providers.enumerated().map { try provider($1, idSeed: "\(org)|\(userId)|\($0)") }
            sub.users[user].oauthProviders += made
            return .object(["createOauthProvidersResult": .object(["providerIds": ids(made.map(\.providerId))])])
        case "ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS":
            let user = try index(of: parameters["userId"]?.stringValue)
            guard case .array(let values)? = parameters["providerIds"], !values.isEmpty else {
                throw BadRequest(message: "providerIds is required")
            }
            let wanted = values.compactMap(\.stringValue)
            for id in wanted where !sub.users[user].oauthProviders.contains(where: { $0.providerId == id }) {
                throw BadRequest(message: "oauth provider not found: \(id)", status: 404, code: "NOT_FOUND")
            }
            sub.users[user].oauthProviders.removeAll { wanted.contains($0.providerId) }
            return .object(["deleteOauthProvidersResult": .object(["providerIds": ids(wanted)])])
        case Self.oauthLoginType:
            guard let token = parameters["oidcToken"]?.stringValue, let hex = parameters["publicKey"]?.stringValue,
                let key = Hex.decode(hex), key.count == 33, P256.isValidPublicKey(key),
                let (_, claims) = SandboxOIDC.verifyForTurnkey(token, now: timing.clock.millis() / 1000)
            else { throw BadRequest(message: "oauth_login needs a valid oidcToken and a compressed P-256 publicKey") }
            guard claims.nonce == SHA256.hex(Array(hex.lowercased().utf8)) else {
                throw BadRequest(message: "the OIDC token's nonce is not the hash of publicKey")
            }
            guard
                let user = sub.users.firstIndex(where: { member in
                    member.oauthProviders.contains { $0.issuer == claims.iss && $0.subject == claims.sub }
                })
            else { throw BadRequest(message: "no user of this organization has this OAuth account") }
            let seconds = parameters["expirationSeconds"]?.stringValue.flatMap { Int64($0) } ?? 900
            let session = SandboxSubOrg.Key(
                apiKeyId: Self.uuid(from: "\(org)|session|\(hex.lowercased())|\(timing.clock.millis())"),
                apiKeyName: "session", publicKey: hex.lowercased(),
                curveType: "API_KEY_CURVE_P256", expiresAtMillis: timing.clock.millis() + seconds * 1000)
            sub.users[user].apiKeys.append(session)
            return .object([
                "oauthLoginResult": .object([
                    "session": .string("sandbox-session." + session.apiKeyId),
                    "userId": .string(sub.users[user].userId),
                ])
            ])
        default:
            throw BadRequest(message: "unsupported activity \(type)")
        }
    }
}
