import BackupCrypto
import BackupModel
import Foundation
import SandboxIdentity

/// The Turnkey steps the flows share.
extension SimulationEngine {
    static let createSubOrgPath = "/public/v1/submit/create_sub_organization"
    static let createUsersPath = "/public/v1/submit/create_users"
    static let createPoliciesPath = "/public/v1/submit/create_policies"
    static let createAPIKeysPath = "/public/v1/submit/create_api_keys"
    static let createProvidersPath = "/public/v1/submit/create_oauth_providers"
    static let deleteProvidersPath = "/public/v1/submit/delete_oauth_providers"
    static let deleteSubOrgPath = "/public/v1/submit/delete_sub_organization"
    static let oauthLoginPath = "/public/v1/submit/oauth_login"
    /// The sync factor's policy (the docs' "Turnkey User Setup"): deletions only.
    static let deleteOnlyCondition =
        "activity.action == 'DELETE' && (activity.resource == 'CREDENTIAL' || activity.resource == 'PRIVATE_KEY' || activity.resource == 'ORGANIZATION' || activity.resource == 'USER')"
    static let deleteOrgCondition = "activity.type == 'ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION'"

    func submit(
        _ user: SimUser, _ path: String, type: String, org: String, _ parameters: JSONValue, _ stamper: TurnkeyStamper,
        metadata: JSONValue? = nil
    ) async -> TurnkeyOutcome {
        count("turnkey.activities")
        let outcome = await turnkey.submit(
            path, type: type, organizationId: org, parameters: parameters, stamper: stamper,
            faults: turnkeyFaults(user), random: user.random, metadata: metadata)
        if case .failed = outcome { count("turnkey.failed") }
        return outcome
    }

    /// The app backend makes the user's sub-org: `auth_user_main` (the root quorum, 1 of 1)
    /// with the flow's session key and, when the user has one, the passkey registration the
    /// service stored. `nil` when Turnkey failed.
    func createSubOrg(_ user: SimUser, session: SimKey) async -> SimUser.SubOrg? {
        var authenticators: [JSONValue] = []
        if let passkey = user.passkey, let registration = passkey.registration,
            let challenge = passkey.registrationChallenge
        {
            authenticators.append(
                .object([
                    "authenticatorName": .string("passkey"),
                    "challenge": .string(Base64.encode(challenge, alphabet: .url, padding: false)),
                    "attestation": .object([
                        "credentialId": registration["rawId"] ?? .null,
                        "clientDataJson": registration["response"]?["clientDataJSON"] ?? .null,
                        "attestationObject": registration["response"]?["attestationObject"] ?? .null,
                        "transports": .array([.string("AUTHENTICATOR_TRANSPORT_INTERNAL")]),
                    ]),
                ]))
        }
        let parameters = JSONValue.object([
            "subOrganizationName": .string("world-app-\(user.accountPublicHex.suffix(12))-\(nowMillis)"),
            "rootQuorumThreshold": .int(1),
            "rootUsers": .array([
                .object([
                    "userName": .string("auth_user_main"),
                    "apiKeys": .array([Self.apiKey("session", session.turnkeyForm, expires: "300")]),
                    "authenticators": .array(authenticators), "oauthProviders": .array([]),
                ])
            ]),
        ])
        let outcome = await submit(
            user, Self.createSubOrgPath, type: "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7", org: turnkey.parentOrgId,
            parameters, .p256(turnkey.parentKey))
        guard case .completed(let result) = outcome,
            let id = result["createSubOrganizationResultV7"]?["subOrganizationId"]?.stringValue,
            case .array(let roots)? = result["createSubOrganizationResultV7"]?["rootUserIds"],
            let authUserId = roots.first?.stringValue
        else { return nil }
        subOrgCreated(id, user: user)
        count("suborgs.created")
        var subOrg = SimUser.SubOrg(id: id, authUserId: authUserId)
        subOrg.passkeyRegistered = !authenticators.isEmpty
        return subOrg
    }

    static func apiKey(_ name: String, _ hex: String, curve: String = "API_KEY_CURVE_P256", expires: String? = nil)
        -> JSONValue
    {
        var key: [String: JSONValue] = [
            "apiKeyName": .string(name), "publicKey": .string(hex), "curveType": .string(curve),
        ]
        if let expires { key["expirationSeconds"] = .string(expires) }
        return .object(key)
    }

    /// `create_users` + `create_policies` for one device's sync factor (stamped by a root
    /// session or the passkey). Failures leave the device without (part of) its Turnkey user.
    func addSyncUser(_ user: SimUser, device: Int, stamper: TurnkeyStamper) async {
        guard var subOrg = user.subOrg, subOrg.exists else { return }
        defer { user.subOrg = subOrg }
        let key = user.devices[device].key.turnkeyForm
        let name = "sync_factor_user_\(user.devices[device].suffix)"
        guard
            let userId = await createUser(
                user, org: subOrg.id, name: name, apiKey: Self.apiKey("sync_factor", key), stamper)
        else {
            count("turnkey.sync_user_missing")
            return
        }
        subOrg.syncKeys.insert(key)
        if await addPolicy(
            user, org: subOrg.id, name: name + "_delete_only", userId: userId, Self.deleteOnlyCondition, stamper)
        {
            subOrg.deletingKeys.insert(key)
        }
    }

    /// The break-glass user: the Backup Account Key (secp256k1), allowed to delete the org.
    func addBreakGlass(_ user: SimUser, stamper: TurnkeyStamper) async {
        guard var subOrg = user.subOrg, subOrg.exists, user.withBreakGlass else { return }
        defer { user.subOrg = subOrg }
        let name = "break_glass_user_\(user.accountPublicHex.suffix(6))"
        guard
            let userId = await createUser(
                user, org: subOrg.id, name: name,
                apiKey: Self.apiKey("backup_account_key", user.accountPublicHex, curve: "API_KEY_CURVE_SECP256K1"),
                stamper)
        else { return }
        subOrg.breakGlass = await addPolicy(
            user, org: subOrg.id, name: name, userId: userId, Self.deleteOrgCondition, stamper)
    }

    /// `create_users` of one user holding one API key; the new user's id, or `nil` when the
    /// activity failed after the client's retries.
    func createUser(_ user: SimUser, org: String, name: String, apiKey: JSONValue, _ stamper: TurnkeyStamper) async
        -> String?
    {
        let created = await submit(
            user, Self.createUsersPath, type: "ACTIVITY_TYPE_CREATE_USERS_V3", org: org,
            .object([
                "users": .array([
                    .object([
                        "userName": .string(name), "apiKeys": .array([apiKey]), "authenticators": .array([]),
                        "oauthProviders": .array([]), "userTags": .array([]),
                    ])
                ])
            ]), stamper)
        guard case .completed(let result) = created,
            case .array(let ids)? = result["createUsersResult"]?["userIds"]
        else { return nil }
        return ids.first?.stringValue
    }

    func addPolicy(
        _ user: SimUser, org: String, name: String, userId: String, _ condition: String, _ stamper: TurnkeyStamper
    )
        async -> Bool
    {
        let outcome = await submit(
            user, Self.createPoliciesPath, type: "ACTIVITY_TYPE_CREATE_POLICIES", org: org,
            .object([
                "policies": .array([
                    .object([
                        "policyName": .string(name), "effect": .string("EFFECT_ALLOW"),
                        "consensus": .string("approvers.any(user, user.id == '\(userId)')"),
                        "condition": .string(condition), "notes": .string(""),
                    ])
                ])
            ]), stamper)
        if case .completed = outcome { return true }
        count("turnkey.policy_missing")
        return false
    }

    /// `create_oauth_providers` for `auth_user_main`; the new provider id.
    func addProvider(_ user: SimUser, _ provider: OIDCProvider, token: String, stamper: TurnkeyStamper) async -> String?
    {
        guard let subOrg = user.subOrg, subOrg.exists else { return nil }
        let outcome = await submit(
            user, Self.createProvidersPath, type: "ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS", org: subOrg.id,
            .object([
                "userId": .string(subOrg.authUserId),
                "oauthProviders": .array([
                    .object(["providerName": .string(provider.rawValue.lowercased()), "oidcToken": .string(token)])
                ]),
            ]), stamper)
        guard case .completed(let result) = outcome,
            case .array(let ids)? = result["createOauthProvidersResult"]?["providerIds"],
            let id = ids.first?.stringValue
        else { return nil }
        user.subOrg?.providers[id] = provider
        return id
    }

    /// How a sub-org deletion ended.
    enum Deletion: Equatable {
        case deleted
        /// Turnkey refused or kept failing; the code, if it gave one.
        case failed(String?)
    }

    /// `delete_sub_organization` stamped by `stamper`; on `PUBLIC_KEY_NOT_FOUND` with
    /// `passkeyFallback`, again with the user's passkey (BF-7's fallback). A sub-org already gone
    /// counts as deleted.
    func deleteSubOrg(_ user: SimUser, stamper: TurnkeyStamper, passkeyFallback: Bool) async -> Deletion {
        guard let subOrg = user.subOrg, subOrg.exists else { return .deleted }
        let parameters = JSONValue.object(["deleteWithoutExport": .bool(true)])
        var outcome = await submit(
            user, Self.deleteSubOrgPath, type: "ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION", org: subOrg.id, parameters,
            stamper)
        if outcome.errorCode == "PUBLIC_KEY_NOT_FOUND", passkeyFallback, let passkey = user.passkey,
            subOrg.passkeyRegistered
        {
            count("bf7.passkey_fallback")
            outcome = await submit(
                user, Self.deleteSubOrgPath, type: "ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION", org: subOrg.id, parameters,
                .passkey(credentialId: passkey.credentialId, key: passkey.key))
        }
        switch outcome {
        case .completed, .failed(404, _):
            user.subOrg?.exists = false
            subOrgDeleted(subOrg.id)
            count("suborgs.deleted")
            return .deleted
        case .failed(_, let code):
            return .failed(code)
        }
    }

    /// ``deleteSubOrg(_:stamper:passkeyFallback:)``, and a sub-org that stays is an orphan of
    /// `step`: `noKey` names the step when Turnkey knew no such key, else the client gave up
    /// after its retries. Returns whether the sub-org is gone.
    @discardableResult
    func tearDown(
        _ user: SimUser, stamper: TurnkeyStamper, passkeyFallback: Bool, step: String, noKey: String, logged: Bool
    ) async -> Bool {
        guard let subOrg = user.subOrg else { return true }
        switch await deleteSubOrg(user, stamper: stamper, passkeyFallback: passkeyFallback) {
        case .deleted:
            return true
        case .failed(let code):
            orphaned(
                subOrg.id, user: user,
                step: code == "PUBLIC_KEY_NOT_FOUND" ? noKey : "\(step) failed after retries (\(code ?? "transient"))",
                logged: logged)
            return false
        }
    }
}
