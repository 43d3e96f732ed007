import BackupCrypto
import BackupModel
import Foundation
import SandboxIdentity
import Turnkey

/// The activities the World App flows submit, beyond `delete_sub_organization`: the app
/// backend's `create_sub_organization` (stamped by the parent's API key), and inside a sub-org
/// `create_users`, `create_policies`, `create_api_keys`, `create_oauth_providers`,
/// `delete_oauth_providers`, and `oauth_login` (stamped by the parent, as Turnkey's auth proxy
/// does). Each is deduplicated by the fingerprint of its body, like a deletion.
extension TurnkeySandbox {
    public static let getOAuthProvidersPath = "/public/v1/query/get_oauth_providers"
    static let createSubOrganizationType = "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7"
    static let oauthLoginType = "ACTIVITY_TYPE_OAUTH_LOGIN"

    /// Submit paths and their activity types.
    public static let submitTypes: [String: String] = [
        "/public/v1/submit/create_sub_organization": createSubOrganizationType,
        "/public/v1/submit/create_users": "ACTIVITY_TYPE_CREATE_USERS_V3",
        "/public/v1/submit/create_policies": "ACTIVITY_TYPE_CREATE_POLICIES",
        "/public/v1/submit/create_api_keys": "ACTIVITY_TYPE_CREATE_API_KEYS_V2",
        "/public/v1/submit/create_oauth_providers": "ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS",
        "/public/v1/submit/delete_oauth_providers": "ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS",
        "/public/v1/submit/oauth_login": oauthLoginType,
    ]

    /// A bad parameter: answered 400 and nothing is recorded.
    struct BadRequest: Error {
        var message: String
        var status = 400
        var code = "INVALID_REQUEST"
    }

    func submit(type: String, org: String, signer: StampSigner, body: [UInt8]) async throws(ConsoleError)
        -> TurnkeyHTTPResponse
    {
        guard let json = FastJSON.parse(Array(body)), json["type"]?.stringValue == type,
            case .object(let parameters)? = json["parameters"]
        else { return Self.error(400, 3, "activity type does not match the route", "INVALID_REQUEST") }
        let fingerprint = SHA256.hex(body)
        if let existing = activities[fingerprint] {
            return Self.ok(TurnkeyWire.ActivityResponse(activity: Self.wire(existing)))
        }
        let caller: Caller
        switch try await self.caller(org: org, signer: signer, body: body) {
        case .found(let found): caller = found
        case .notFound:
            return try await orgExists(org) ? Self.publicKeyNotFound() : Self.orgNotFound(org)
        case .badSignature: return Self.error(401, 16, "could not verify WebAuthn stamp", "UNAUTHENTICATED")
        }
        let result: JSONValue
        do {
            if type == Self.createSubOrganizationType {
                guard org == parentOrgId, caller.inParent else {
                    throw BadRequest(
                        message: "sub-organizations are created in the parent organization", status: 403,
                        code: "PERMISSION_DENIED")
                }
                result = try await createSubOrganization(parameters, fingerprint: fingerprint)
            } else {
                guard org != parentOrgId, try await directory.contains(org) else { return Self.orgNotFound(org) }
                if type == Self.oauthLoginType {
                    guard caller.inParent else {
                        throw BadRequest(
                            message: "oauth_login is submitted by the parent", status: 403, code: "PERMISSION_DENIED")
                    }
                } else {
                    guard let memberId = caller.memberId, let sub = details[org], sub.allows(memberId, type: type)
                    else {
                        throw BadRequest(
                            message: "policy denies \(type) for user \(caller.user.name)", status: 403,
                            code: "PERMISSION_DENIED")
                    }
                }
                result = try apply(type: type, org: org, parameters, fingerprint: fingerprint)
            }
        } catch let bad as BadRequest {
            return Self.error(bad.status, bad.status == 403 ? 7 : 3, bad.message, bad.code)
        } catch let error as ConsoleError {
            throw error
        } catch {
            return Self.error(500, 13, "sandbox failure", "INTERNAL")
        }
        let target = type == Self.createSubOrganizationType ? parentOrgId : org
        let activity = Activity(
            id: Self.uuid(from: fingerprint), organizationId: target, status: TurnkeyActivityStatus.completed,
            fingerprint: fingerprint, pollsLeft: 0, type: type, result: result)
        activities[fingerprint] = activity
        fingerprintsById[activity.id] = fingerprint
        mutations += 1
        return Self.ok(TurnkeyWire.ActivityResponse(activity: Self.wire(activity)))
    }

    func createSubOrganization(_ parameters: [String: JSONValue], fingerprint: String) async throws -> JSONValue {
        guard let name = parameters["subOrganizationName"]?.stringValue,
            case .array(let roots)? = parameters["rootUsers"],
            !roots.isEmpty
        else { throw BadRequest(message: "subOrganizationName and rootUsers are required") }
        let threshold: Int
        switch parameters["rootQuorumThreshold"] {
        case .int(let n)?: threshold = Int(n)
        default: throw BadRequest(message: "rootQuorumThreshold is required")
        }
        let id = Self.uuid(from: "suborg|" + fingerprint)
        var users: [SandboxSubOrg.Member] = []
        for (index, root) in roots.enumerated() {
            users.append(try member(root, id: Self.uuid(from: "\(fingerprint)|root|\(index)")))
        }
        guard threshold >= 1, threshold <= users.count else { throw BadRequest(message: "invalid rootQuorumThreshold") }
        try await directory.insert(id)
        details[id] = SandboxSubOrg(
            name: name, rootQuorumThreshold: threshold, rootUserIds: users.map(\.userId), users: users, policies: [])
        return .object([
            "createSubOrganizationResultV7": .object([
                "subOrganizationId": .string(id), "rootUserIds": .array(users.map { .string($0.userId) }),
            ])
        ])
    }

    /// One user's parameters (`userName`, `apiKeys`, `authenticators`, `oauthProviders`).
    func member(_ value: JSONValue, id: String) throws -> SandboxSubOrg.Member {
        guard let name = value["userName"]?.stringValue, !name.isEmpty else {
            throw BadRequest(message: "userName is required")
        }
        var member = SandboxSubOrg.Member(
            userId: id, userName: name, apiKeys: [], authenticators: [], oauthProviders: [])
        if case .array(let keys)? = value["apiKeys"] {
            member.apiKeys = try keys.enumerated().map { try apiKey($1, id: Self.uuid(from: "\(id)|key|\($0)")) }
        }
        if case .array(let authenticators)? = value["authenticators"] {
            member.authenticators = try authenticators.enumerated().map {
                try authenticator($1, id: Self.uuid(from: "\(id)|authenticator|\($0)"))
            }
        }
        if case .array(let providers)? = value["oauthProviders"] {
            member.oauthProviders = try providers.enumerated().map {
                try provider($1, idSeed: "\(id)|provider|\($0)")
            }
        }
        return member
    }

    func apiKey(_ value: JSONValue, id: String) throws -> SandboxSubOrg.Key {
        guard let name = value["apiKeyName"]?.stringValue, let hex = value["publicKey"]?.stringValue?.lowercased(),
            let curve = value["curveType"]?.stringValue, let bytes = Hex.decode(hex), bytes.count == 33
        else { throw BadRequest(message: "an API key needs apiKeyName, a compressed publicKey and curveType") }
        let valid =
            curve == "API_KEY_CURVE_P256"
            ? P256.isValidPublicKey(bytes) : curve == "API_KEY_CURVE_SECP256K1" && Secp256k1.isValidPublicKey(bytes)
        guard valid else { throw BadRequest(message: "the publicKey is not a point of \(curve)") }
        let expires = value["expirationSeconds"]?.stringValue.flatMap { Int64($0) }.map {
            timing.clock.millis() + $0 * 1000
        }
        return SandboxSubOrg.Key(
            apiKeyId: id, apiKeyName: name, publicKey: hex, curveType: curve, expiresAtMillis: expires)
    }

    /// A passkey registration (the attestation verified against the activity's `challenge`).
    func authenticator(_ value: JSONValue, id: String) throws -> SandboxSubOrg.Authenticator {
        guard let name = value["authenticatorName"]?.stringValue,
            let challenge = value["challenge"]?.stringValue.flatMap({ Base64.decode($0, alphabet: .url) }),
            let attestation = value["attestation"], let credentialId = attestation["credentialId"]?.stringValue,
            let clientData = attestation["clientDataJson"]?.stringValue,
            let object = attestation["attestationObject"]?.stringValue
        else { throw BadRequest(message: "an authenticator needs authenticatorName, challenge and attestation") }
        let credential = JSONValue.object([
            "rawId": .string(credentialId), "type": .string("public-key"),
            "response": .object(["attestationObject": .string(object), "clientDataJSON": .string(clientData)]),
        ])
        guard case .success(let stored) = SandboxWebAuthn.verifyRegistration(credential, challenge: challenge) else {
            throw BadRequest(message: "the authenticator's attestation does not verify")
        }
        return SandboxSubOrg.Authenticator(
            authenticatorId: id, authenticatorName: name, credentialId: stored.credentialId,
            publicKey: Base64.encode(stored.publicKey))
    }

    /// An OIDC provider; its id comes from `idSeed` and the account, not from the body (the ID
    /// token's ES256 signature differs every time, and the same world must get the same ids).
    func provider(_ value: JSONValue, idSeed: String) throws -> SandboxSubOrg.Provider {
        guard let name = value["providerName"]?.stringValue, let token = value["oidcToken"]?.stringValue,
            let (_, claims) = SandboxOIDC.verifyForTurnkey(token, now: timing.clock.millis() / 1000)
        else { throw BadRequest(message: "an OAuth provider needs providerName and a valid oidcToken") }
        return SandboxSubOrg.Provider(
            providerId: Self.uuid(from: "\(idSeed)|\(claims.iss)|\(claims.sub)"), providerName: name,
            issuer: claims.iss, audience: claims.aud, subject: claims.sub)
    }
}
