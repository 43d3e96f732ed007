import BackupModel

/// A sub-organization made through `create_sub_organization`, with what the flows put in it:
/// its users (API keys, passkey authenticators, OIDC providers), root quorum and policies.
///
/// World App's sub-orgs (reference: the docs' "Turnkey User Setup") hold `auth_user_main` (the
/// root quorum, 1 of 1: the user's passkey and OIDC providers), one `sync_factor_user_<suffix>`
/// per device (its P-256 API key; a policy that allows deletions only) and
/// `break_glass_user_<6 hex>` (the Backup Account Key; a policy that allows deleting the org).
/// The ephemeral `root_user_genesis` the app backend bootstraps with is left out: the sandbox's
/// app backend creates `auth_user_main` directly.
public struct SandboxSubOrg: Codable, Sendable, Equatable {
    public var name: String
    public var rootQuorumThreshold: Int
    public var rootUserIds: [String]
    public var users: [Member]
    public var policies: [Policy]

    public struct Member: Codable, Sendable, Equatable {
        public var userId: String
        public var userName: String
        public var apiKeys: [Key]
        public var authenticators: [Authenticator]
        public var oauthProviders: [Provider]
    }

    public struct Key: Codable, Sendable, Equatable {
        public var apiKeyId: String
        public var apiKeyName: String
        /// Lowercase hex of the 33-byte compressed key.
        public var publicKey: String
        /// `API_KEY_CURVE_P256` or `API_KEY_CURVE_SECP256K1`.
        public var curveType: String
        /// When a session key stops working (unix ms); `nil` for long-lived keys.
        public var expiresAtMillis: Int64?
    }

    public struct Authenticator: Codable, Sendable, Equatable {
        public var authenticatorId: String
        public var authenticatorName: String
        /// base64url without padding.
        public var credentialId: String
        /// Standard base64 of the 65-byte P-256 point.
        public var publicKey: String
    }

    public struct Provider: Codable, Sendable, Equatable {
        public var providerId: String
        public var providerName: String
        public var issuer: String
        public var audience: String
        public var subject: String
    }

    public struct Policy: Codable, Sendable, Equatable {
        public var policyId: String
        public var policyName: String
        /// `EFFECT_ALLOW` or `EFFECT_DENY`.
        public var effect: String
        public var consensus: String
        public var condition: String
    }

    /// Whether `userId` alone meets the root quorum.
    func isRoot(_ userId: String) -> Bool { rootQuorumThreshold <= 1 && rootUserIds.contains(userId) }

    /// Whether `userId`'s policies allow an activity of `type` (root users need none).
    func allows(_ userId: String, type: String) -> Bool {
        if isRoot(userId) { return true }
        let mine = policies.filter { PolicyExpression.approvers(in: $0.consensus).contains(userId) }
        let facts = ActivityFacts(type: type)
        if mine.contains(where: { $0.effect == "EFFECT_DENY" && PolicyExpression.evaluate($0.condition, facts) }) {
            return false
        }
        return mine.contains { $0.effect == "EFFECT_ALLOW" && PolicyExpression.evaluate($0.condition, facts) }
    }

    /// The member holding an unexpired API key `hex`.
    func member(apiKey hex: String, nowMillis: Int64) -> Member? {
        users.first { member in
            member.apiKeys.contains { $0.publicKey == hex && ($0.expiresAtMillis.map { $0 > nowMillis } ?? true) }
        }
    }

    /// The member holding the passkey `credentialId`, with that authenticator.
    func member(credentialId: String) -> (Member, Authenticator)? {
        for member in users {
            if let authenticator = member.authenticators.first(where: { $0.credentialId == credentialId }) {
                return (member, authenticator)
            }
        }
        return nil
    }
}

/// What a policy condition can ask about an activity: `activity.type`, `.action`, `.resource`.
struct ActivityFacts {
    var type: String
    var action: String
    var resource: String

    init(type: String) {
        self.type = type
        let name = type.replacingOccurrences(of: "ACTIVITY_TYPE_", with: "")
        action = name.hasPrefix("DELETE_") ? "DELETE" : name.hasPrefix("CREATE_") ? "CREATE" : "UPDATE"
        switch name {
        case let n where n.contains("SUB_ORGANIZATION"): resource = "ORGANIZATION"
        case let n where n.contains("API_KEYS") || n.contains("OAUTH_PROVIDERS") || n.contains("AUTHENTICATORS"):
            resource = "CREDENTIAL"
        case let n where n.contains("USERS"): resource = "USER"
        case let n where n.contains("PRIVATE_KEY"): resource = "PRIVATE_KEY"
        case let n where n.contains("POLIC"): resource = "POLICY"
        default: resource = "OTHER"
        }
    }

    func value(_ name: String) -> String? {
        switch name {
        case "activity.type": type
        case "activity.action": action
        case "activity.resource": resource
        default: nil
        }
    }
}

/// The small part of Turnkey's policy language the World App policies use: `==`, `!=`, `&&`,
/// `||`, parentheses, `true`/`false`, `activity.{type,action,resource}` and quoted strings;
/// consensus as `approvers.any(user, user.id == '<id>')`. Anything else evaluates to false.
enum PolicyExpression {
    static func approvers(in consensus: String) -> [String] {
        var ids: [String] = []
        var rest = Substring(consensus)
        while let range = rest.range(of: "user.id == '") {
            let tail = rest[range.upperBound...]
            guard let end = tail.firstIndex(of: "'") else { break }
            ids.append(String(tail[..<end]))
            rest = tail[tail.index(after: end)...]
        }
        return ids
    }

    static func evaluate(_ condition: String, _ facts: ActivityFacts) -> Bool {
        var parser = Parser(tokens: tokenize(condition), facts: facts)
        guard let value = parser.or(), parser.index == parser.tokens.count else { return false }
        return value
    }

    static func tokenize(_ text: String) -> [String] {
        var tokens: [String] = []
        var chars = Array(text)
        var i = 0
        chars.append(" ")
        while i < chars.count - 1 {
            let c = chars[i]
            if c == " " {
                i += 1
                continue
            }
            if c == "(" || c == ")" {
                tokens.append(String(c))
                i += 1
                continue
            }
            let pair = String(chars[i...i + 1])
            if ["==", "!=", "&&", "||"].contains(pair) {
                tokens.append(pair)
                i += 2
                continue
            }
            if c == "'" {
                var j = i + 1
                while j < chars.count - 1, chars[j] != "'" { j += 1 }
                tokens.append(String(chars[i...min(j, chars.count - 2)]))
                i = j + 1
                continue
            }
            var j = i
            while j < chars.count - 1, chars[j].isLetter || chars[j].isNumber || chars[j] == "." || chars[j] == "_" {
                j += 1
            }
            if j == i { return [] }
            tokens.append(String(chars[i..<j]))
            i = j
        }
        return tokens
    }

    struct Parser {
        let tokens: [String]
        let facts: ActivityFacts
        var index = 0

        mutating func or() -> Bool? {
            guard var value = and() else { return nil }
            while index < tokens.count, tokens[index] == "||" {
                index += 1
                guard let rhs = and() else { return nil }
                value = value || rhs
            }
            return value
        }

        mutating func and() -> Bool? {
            guard var value = primary() else { return nil }
            while index < tokens.count, tokens[index] == "&&" {
                index += 1
                guard let rhs = primary() else { return nil }
                value = value && rhs
            }
            return value
        }

        mutating func primary() -> Bool? {
            guard index < tokens.count else { return nil }
            let token = tokens[index]
            index += 1
            if token == "(" {
                guard let value = or(), index < tokens.count, tokens[index] == ")" else { return nil }
                index += 1
                return value
            }
            if token == "true" { return true }
            if token == "false" { return false }
            guard index + 1 < tokens.count, tokens[index] == "==" || tokens[index] == "!=" else { return nil }
            let op = tokens[index]
            let rhs = tokens[index + 1]
            index += 2
            guard let lhs = operand(token), let right = operand(rhs) else { return false }
            return op == "==" ? lhs == right : lhs != right
        }

        func operand(_ token: String) -> String? {
            if token.hasPrefix("'"), token.hasSuffix("'"), token.count >= 2 {
                return String(token.dropFirst().dropLast())
            }
            return facts.value(token)
        }
    }
}
