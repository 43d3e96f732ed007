import BackupCrypto
import BackupModel
import Foundation
import Turnkey

extension TurnkeySandbox {
    /// The key's user in `org`, looking in the parent too; `nil` = PUBLIC_KEY_NOT_FOUND.
    func findUser(key: String, org: String) async throws(ConsoleError) -> (user: SandboxUser, inParent: Bool)? {
        guard case .found(let caller) = try await caller(org: org, signer: .apiKey(key), body: []) else { return nil }
        return (caller.user, caller.inParent)
    }

    func orgExists(_ org: String) async throws(ConsoleError) -> Bool {
        if org == parentOrgId { return true }
        return try await directory.contains(org)
    }

    func whoami(org: String, key: String) async throws(ConsoleError) -> TurnkeyHTTPResponse {
        guard try await orgExists(org) else { return Self.orgNotFound(org) }
        guard let found = try await findUser(key: key, org: org) else { return Self.publicKeyNotFound() }
        return Self.ok(
            TurnkeyWire.WhoamiResponse(
                organizationId: org, organizationName: org == parentOrgId ? "sandbox parent" : "sub-org",
                userId: Self.uuid(from: found.user.name + found.user.publicKey), username: found.user.name))
    }

    func listSubOrgs(org: String, key: String, object: [String: Any]) async throws(ConsoleError) -> TurnkeyHTTPResponse
    {
        guard org == parentOrgId else {
            return try await orgExists(org)
                ? Self.ok(TurnkeyWire.ListSubOrgsResponse(organizationIds: [])) : Self.orgNotFound(org)
        }
        guard try await findUser(key: key, org: org) != nil else { return Self.publicKeyNotFound() }
        let options = object["paginationOptions"] as? [String: Any]
        let limit = min(100, max(1, Int(options?["limit"] as? String ?? "10") ?? 10))
        let after = (options?["after"] as? String).flatMap { $0.isEmpty ? nil : $0 }
        stats.listPages += 1
        let page = try await directory.page(after: after, limit: limit)
        // Hand-written: ten thousand pages in a benchmark should not pay for JSONEncoder.
        var text = #"{"organizationIds":["#
        text.reserveCapacity(40 * page.count + 24)
        for (index, id) in page.enumerated() {
            if index > 0 { text += "," }
            text += "\"" + id + "\""
        }
        text += "]}"
        return TurnkeyHTTPResponse(status: 200, body: Array(text.utf8))
    }

    func listUsers(org: String, key: String) async throws(ConsoleError) -> TurnkeyHTTPResponse {
        guard try await orgExists(org) else { return Self.orgNotFound(org) }
        guard try await findUser(key: key, org: org) != nil else { return Self.publicKeyNotFound() }
        var users: [TurnkeyWire.User] = []
        if let sub = details[org] {
            users = sub.users.map { member in
                TurnkeyWire.User(
                    userId: member.userId, userName: member.userName,
                    apiKeys: member.apiKeys.map { key in
                        TurnkeyWire.APIKey(
                            apiKeyId: key.apiKeyId, apiKeyName: key.apiKeyName,
                            credential: .init(publicKey: key.publicKey, type: key.curveType))
                    },
                    authenticators: member.authenticators.map {
                        TurnkeyWire.Authenticator(
                            authenticatorId: $0.authenticatorId, authenticatorName: $0.authenticatorName,
                            credentialId: $0.credentialId)
                    },
                    oauthProviders: member.oauthProviders.map(Self.wire))
            }
        }
        let plain =
            org == parentOrgId ? parentUsers : details[org] != nil ? defaultSubOrgUsers : await self.users(of: org)
        users += plain.map { user in
            let keyType = user.scheme.hasSuffix("SECP256K1") ? "API_KEY_CURVE_SECP256K1" : "API_KEY_CURVE_P256"
            return TurnkeyWire.User(
                userId: Self.uuid(from: org + user.name), userName: user.name,
                apiKeys: [
                    TurnkeyWire.APIKey(
                        apiKeyId: Self.uuid(from: org + user.publicKey), apiKeyName: user.name,
                        credential: .init(publicKey: user.publicKey, type: keyType))
                ])
        }
        return Self.ok(TurnkeyWire.ListUsersResponse(users: users))
    }

    /// `get_oauth_providers`: every OIDC provider of the org's users.
    func getOAuthProviders(org: String, key: String) async throws(ConsoleError) -> TurnkeyHTTPResponse {
        guard try await orgExists(org) else { return Self.orgNotFound(org) }
        guard try await findUser(key: key, org: org) != nil else { return Self.publicKeyNotFound() }
        let providers = (details[org]?.users ?? []).flatMap { $0.oauthProviders.map(Self.wire) }
        return Self.ok(OAuthProvidersResponse(oauthProviders: providers))
    }

    struct OAuthProvidersResponse: Encodable {
        var oauthProviders: [TurnkeyWire.OAuthProvider]
    }

    static func wire(_ provider: SandboxSubOrg.Provider) -> TurnkeyWire.OAuthProvider {
        TurnkeyWire.OAuthProvider(
            providerId: provider.providerId, providerName: provider.providerName, issuer: provider.issuer,
            audience: provider.audience, subject: provider.subject)
    }

    func getActivity(org: String, key: String, object: [String: Any]) async throws(ConsoleError) -> TurnkeyHTTPResponse
    {
        guard let id = object["activityId"] as? String, let fingerprint = fingerprintsById[id],
            var activity = activities[fingerprint], activity.organizationId == org
        else { return Self.error(404, 5, "activity not found", "ACTIVITY_NOT_FOUND") }
        guard try await findUser(key: key, org: org) != nil || activity.status != TurnkeyActivityStatus.pending else {
            return Self.publicKeyNotFound()
        }
        if activity.status == TurnkeyActivityStatus.pending {
            activity.pollsLeft -= 1
            if activity.pollsLeft <= 0 {
                _ = try await directory.remove(org)
                details[org] = nil
                stats.deletions += 1
                activity.status = TurnkeyActivityStatus.completed
                mutations += 1
            }
            activities[fingerprint] = activity
        }
        return Self.ok(TurnkeyWire.ActivityResponse(activity: Self.wire(activity)))
    }

    func delete(org: String, signer: StampSigner, object: [String: Any], body: [UInt8]) async throws(ConsoleError)
        -> TurnkeyHTTPResponse
    {
        guard object["type"] as? String == TurnkeyActivityBody.deleteSubOrganizationType else {
            return Self.error(400, 3, "activity type does not match the route", "INVALID_REQUEST")
        }
        let fingerprint = SHA256.hex(body)
        deleteBodies[org, default: []].append(String(decoding: body, as: UTF8.self))
        mutations += 1
        // An identical body is the same activity, even after the org is gone.
        if let existing = activities[fingerprint] {
            return Self.ok(TurnkeyWire.ActivityResponse(activity: Self.wire(existing)))
        }
        guard org != parentOrgId else {
            return Self.error(403, 7, "the parent organization cannot be deleted here", "PERMISSION_DENIED")
        }
        guard try await directory.contains(org) else { return Self.orgNotFound(org) }
        let found: Caller
        switch try await caller(org: org, signer: signer, body: body) {
        case .found(let caller): found = caller
        case .notFound: return Self.publicKeyNotFound()
        case .badSignature: return Self.error(401, 16, "could not verify WebAuthn stamp", "UNAUTHENTICATED")
        }
        guard !found.inParent, found.user.canDelete else {
            return Self.error(
                403, 7, "policy denies \(TurnkeyActivityBody.deleteSubOrganizationType) for user \(found.user.name)",
                "PERMISSION_DENIED")
        }
        let parameters = object["parameters"] as? [String: Any]
        guard parameters?["deleteWithoutExport"] as? Bool == true else {
            return Self.error(
                400, 9, "sub-organization has wallets or keys that were not exported; set deleteWithoutExport",
                "EXPORT_REQUIRED")
        }
        var activity = Activity(
            id: Self.uuid(from: fingerprint), organizationId: org, status: TurnkeyActivityStatus.completed,
            fingerprint: fingerprint, pollsLeft: 0)
        if faults.consensusSubOrgs.contains(org) {
            activity.status = TurnkeyActivityStatus.consensusNeeded
        } else if faults.rejectedSubOrgs.contains(org) {
            activity.status = TurnkeyActivityStatus.rejected
        } else if faults.pendingRate > 0, Double(rng.uniform(1_000_000)) / 1_000_000 < faults.pendingRate {
            activity.status = TurnkeyActivityStatus.pending
            activity.pollsLeft = max(1, faults.pendingPolls)
        } else {
            _ = try await directory.remove(org)
            details[org] = nil
            stats.deletions += 1
        }
        activity.result = .object(["deleteSubOrganizationResult": .object(["subOrganizationUuid": .string(org)])])
        activities[fingerprint] = activity
        fingerprintsById[activity.id] = fingerprint
        return Self.ok(TurnkeyWire.ActivityResponse(activity: Self.wire(activity)))
    }

    // MARK: Answers

    static func wire(_ activity: Activity) -> TurnkeyWire.Activity {
        TurnkeyWire.Activity(
            id: activity.id, organizationId: activity.organizationId, status: activity.status,
            type: activity.type, fingerprint: activity.fingerprint,
            failure: activity.status == TurnkeyActivityStatus.rejected
                ? TurnkeyWire.Failure(code: 7, message: "rejected") : nil,
            result: activity.status == TurnkeyActivityStatus.completed ? activity.result : nil)
    }

    static func ok(_ value: some Encodable) -> TurnkeyHTTPResponse {
        TurnkeyHTTPResponse(status: 200, body: TurnkeyWire.encode(value))
    }

    static func error(_ status: Int, _ code: Int, _ message: String, _ turnkeyErrorCode: String?) -> TurnkeyHTTPResponse
    {
        TurnkeyHTTPResponse(
            status: status,
            body: TurnkeyWire.encode(
                TurnkeyErrorPayload(code: code, message: message, turnkeyErrorCode: turnkeyErrorCode)))
    }

    static func publicKeyNotFound() -> TurnkeyHTTPResponse {
        error(401, 16, TurnkeyError.publicKeyNotFoundMessage, "PUBLIC_KEY_NOT_FOUND")
    }

    static func orgNotFound(_ org: String) -> TurnkeyHTTPResponse {
        error(404, 5, "organization not found: \(org)", "ORGANIZATION_NOT_FOUND")
    }

    static func rateLimit(retryAfter: Int?) -> TurnkeyHTTPResponse {
        var response = error(429, 8, "rate limit exceeded", "RATE_LIMIT_EXCEEDED")
        response.retryAfter = retryAfter.map(String.init)
        return response
    }

    /// A UUID-shaped id derived from `seed` (activity and user ids are stable across runs).
    static func uuid(from seed: String) -> String {
        let hex = Array(Hex.encode(SHA256.hash(Array(seed.utf8)).prefix(16)))
        return String(hex[0..<8]) + "-" + String(hex[8..<12]) + "-" + String(hex[12..<16]) + "-"
            + String(hex[16..<20]) + "-" + String(hex[20..<32])
    }
}
