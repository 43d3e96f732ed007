import AsyncHTTPClient
import BackupCrypto
import BackupModel
import Foundation
import NIOCore
import SandboxIdentity
import Testing
import Turnkey

@testable import TurnkeySandbox

/// The activities the World App flows submit, over real HTTP: the app backend's sub-org with
/// its root quorum, the client's users, keys, policies and OIDC providers, and who may delete it
/// (sync factor, passkey, break-glass; `PUBLIC_KEY_NOT_FOUND` for a key that is not there).
@Suite struct SubOrgActivityTests {
    /// A sub-org made the way BF-1 makes one, with handles on every key in it.
    struct World {
        let harness: SandboxHarness
        /// The process-wide client: a failed start or a throwing test leaves nothing to shut down.
        var http: HTTPClient { .shared }
        let session: SecretBytes
        let sync: SecretBytes
        let passkeyId: [UInt8]
        let passkey: SecretBytes
        let account: SecretBytes
        var subOrg = ""
        var authUserId = ""
        var providerId = ""

        init() async throws {
            harness = try await SandboxHarness(subOrgCount: 2)
            let rng = SeededRandom(seed: 77)
            session = P256.generatePrivateKey(using: rng)
            sync = P256.generatePrivateKey(using: rng)
            passkey = P256.generatePrivateKey(using: rng)
            passkeyId = rng.bytes(16)
            account = Secp256k1.generateSecretKey(using: rng)
        }

        func stop() async {
            await harness.stop()
        }

        static func hex(_ key: SecretBytes) -> String {
            Hex.encode((try? P256.publicKey(privateKey: key, compressed: true)) ?? [])
        }

        /// Submits an activity of `type` to `org`, stamped by `stamper`; the answer and its JSON.
        func submit(
            _ path: String, _ type: String, org: String, _ parameters: JSONValue, stamp: Stamp, fault: String? = nil
        ) async throws -> (status: Int, json: JSONValue?) {
            var body = Array(
                #"{"type":"\#(type)","timestampMs":"\#(harness.time.now)","organizationId":"\#(org)","parameters":"#
                    .utf8)
            body += SortedJSON.bytes(parameters) + Array("}".utf8)
            harness.time.advance(byMillis: 1)
            return try await send(path, body: body, stamp: stamp, fault: fault)
        }

        enum Stamp {
            case p256(SecretBytes)
            case secp256k1(SecretBytes)
            case passkey
        }

        func send(_ path: String, body: [UInt8], stamp: Stamp, fault: String? = nil) async throws -> (
            status: Int, json: JSONValue?
        ) {
            var request = HTTPClientRequest(url: harness.server.baseURL + path)
            request.method = .POST
            request.headers.add(name: "content-type", value: "application/json")
            switch stamp {
            case .p256(let key):
                request.headers.add(
                    name: "X-Stamp",
                    value: try TurnkeyStamp.sign(body: body, with: P256StampSigner(privateKey: key)).headerValue)
            case .secp256k1(let key):
                request.headers.add(
                    name: "X-Stamp",
                    value: try TurnkeyStamp.sign(body: body, with: Secp256k1StampSigner(secretKey: key)).headerValue)
            case .passkey:
                request.headers.add(
                    name: TurnkeySandbox.webAuthnStampHeader,
                    value: try TurnkeySandbox.webAuthnStamp(credentialId: passkeyId, body: body, privateKey: passkey))
            }
            if let fault { request.headers.add(name: TurnkeySandbox.faultHeader, value: fault) }
            request.body = .bytes(ByteBuffer(bytes: body))
            let response = try await http.execute(request, timeout: .seconds(30))
            let bytes = try await response.body.collect(upTo: 1 << 20)
            return (Int(response.status.code), FastJSON.parse(Array(bytes.readableBytesView)))
        }

        static func user(_ name: String, keys: [JSONValue]) -> JSONValue {
            .object([
                "userName": .string(name), "apiKeys": .array(keys), "authenticators": .array([]),
                "oauthProviders": .array([]), "userTags": .array([]),
            ])
        }

        static func key(_ hex: String, curve: String = "API_KEY_CURVE_P256", expires: String? = nil) -> JSONValue {
            var key: [String: JSONValue] = [
                "apiKeyName": .string("k"), "publicKey": .string(hex), "curveType": .string(curve),
            ]
            if let expires { key["expirationSeconds"] = .string(expires) }
            return .object(key)
        }

        func policy(_ userId: String, _ condition: String) -> JSONValue {
            .object([
                "policies": .array([
                    .object([
                        "policyName": .string("p"), "effect": .string("EFFECT_ALLOW"),
                        "consensus": .string("approvers.any(user, user.id == '\(userId)')"),
                        "condition": .string(condition), "notes": .string(""),
                    ])
                ])
            ])
        }

        /// BF-1's Turnkey part: the sub-org (parent key), the provider, the sync user with its
        /// delete-only policy, the break-glass user with its delete-the-org policy.
        mutating func build(syncPolicy: Bool = true, breakGlass: Bool = true) async throws {
            let registrationChallenge = [UInt8](repeating: 3, count: 32)
            let registration = try SandboxWebAuthn.register(
                challenge: registrationChallenge, credentialId: passkeyId, privateKey: passkey)
            let created = try await submit(
                "/public/v1/submit/create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7",
                org: SandboxHarness.parent,
                .object([
                    "subOrganizationName": .string("world-app-user"), "rootQuorumThreshold": .int(1),
                    "rootUsers": .array([
                        .object([
                            "userName": .string("auth_user_main"),
                            "apiKeys": .array([Self.key(Self.hex(session), expires: "300")]),
                            "authenticators": .array([
                                .object([
                                    "authenticatorName": .string("passkey"),
                                    "challenge": .string(
                                        Base64.encode(registrationChallenge, alphabet: .url, padding: false)),
                                    "attestation": .object([
                                        "credentialId": registration["rawId"] ?? .null,
                                        "clientDataJson": registration["response"]?["clientDataJSON"] ?? .null,
                                        "attestationObject": registration["response"]?["attestationObject"] ?? .null,
                                    ]),
                                ])
                            ]), "oauthProviders": .array([]),
                        ])
                    ]),
                ]), stamp: .p256(harness.apiKey))
            let result = try #require(
                created.json?["activity"]?["result"]?["createSubOrganizationResultV7"], "\(created)")
            subOrg = try #require(result["subOrganizationId"]?.stringValue)
            guard case .array(let roots)? = result["rootUserIds"] else { throw HarnessError("no root users") }
            authUserId = try #require(roots.first?.stringValue)
            let now = harness.time.now / 1000
            let token = try SandboxOIDC.idToken(
                .init(
                    iss: OIDCProvider.google.issuer, aud: SandboxOIDC.googleClientId, sub: "1234", email: "a@b.c",
                    iat: now,
                    exp: now + 3600, nonce: nil), provider: .google)
            let provider = try await submit(
                "/public/v1/submit/create_oauth_providers", "ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS", org: subOrg,
                .object([
                    "userId": .string(authUserId),
                    "oauthProviders": .array([
                        .object(["providerName": .string("google"), "oidcToken": .string(token)])
                    ]),
                ]), stamp: .p256(session))
            guard
                case .array(let ids)? = provider.json?["activity"]?["result"]?["createOauthProvidersResult"]?[
                    "providerIds"]
            else { throw HarnessError("no provider: \(provider)") }
            providerId = try #require(ids.first?.stringValue)
            let syncUser = try await submit(
                "/public/v1/submit/create_users", "ACTIVITY_TYPE_CREATE_USERS_V3", org: subOrg,
                .object(["users": .array([Self.user("sync_factor_user_1", keys: [Self.key(Self.hex(sync))])])]),
                stamp: .p256(session))
            guard case .array(let users)? = syncUser.json?["activity"]?["result"]?["createUsersResult"]?["userIds"],
                let syncUserId = users.first?.stringValue
            else { throw HarnessError("no sync user") }
            if syncPolicy {
                let policy = try await submit(
                    "/public/v1/submit/create_policies", "ACTIVITY_TYPE_CREATE_POLICIES", org: subOrg,
                    policy(
                        syncUserId,
                        "activity.action == 'DELETE' && (activity.resource == 'CREDENTIAL' || activity.resource == 'ORGANIZATION' || activity.resource == 'USER')"
                    ), stamp: .p256(session))
                #expect(policy.status == 200)
            }
            if breakGlass {
                let accountHex = Hex.encode(try Secp256k1.publicKey(secretKey: account, compressed: true))
                let glass = try await submit(
                    "/public/v1/submit/create_users", "ACTIVITY_TYPE_CREATE_USERS_V3", org: subOrg,
                    .object([
                        "users": .array([
                            Self.user(
                                "break_glass_user_\(accountHex.suffix(6))",
                                keys: [Self.key(accountHex, curve: "API_KEY_CURVE_SECP256K1")])
                        ])
                    ]), stamp: .p256(session))
                guard case .array(let glassIds)? = glass.json?["activity"]?["result"]?["createUsersResult"]?["userIds"],
                    let glassId = glassIds.first?.stringValue
                else { throw HarnessError("no break-glass user") }
                _ = try await submit(
                    "/public/v1/submit/create_policies", "ACTIVITY_TYPE_CREATE_POLICIES", org: subOrg,
                    policy(glassId, "activity.type == 'ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION'"), stamp: .p256(session))
            }
        }

        func delete(stamp: Stamp) async throws -> (status: Int, json: JSONValue?) {
            try await submit(
                TurnkeyWire.deleteSubOrganizationPath, "ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION", org: subOrg,
                .object(["deleteWithoutExport": .bool(true)]), stamp: stamp)
        }
    }

    func withWorld(syncPolicy: Bool = true, breakGlass: Bool = true, _ body: (World) async throws -> Void) async throws
    {
        var world = try await World()
        do {
            try await world.build(syncPolicy: syncPolicy, breakGlass: breakGlass)
            try await body(world)
        } catch {
            await world.stop()
            throw error
        }
        await world.stop()
    }

    @Test func theSubOrgHoldsWhatTheFlowsPutThere() async throws {
        try await withWorld { w in
            #expect(try await w.harness.listPage(limit: "100", after: nil).contains(w.subOrg))
            let users = try await w.harness.client().listUsers(
                organizationId: w.subOrg, signer: .apiKey(w.harness.apiKey))
            let byName = Dictionary(uniqueKeysWithValues: users.map { ($0.userName, $0) })
            #expect(byName["auth_user_main"]?.oauthProviders?.map(\.providerId) == [w.providerId])
            #expect(byName["auth_user_main"]?.oauthProviders?.first?.subject == "1234")
            #expect(
                byName["auth_user_main"]?.authenticators?.first?.credentialId
                    == Base64.encode(w.passkeyId, alphabet: .url, padding: false))
            #expect(byName["sync_factor_user_1"]?.apiKeys.map(\.credential.publicKey) == [World.hex(w.sync)])
            #expect(byName.keys.contains { $0.hasPrefix("break_glass_user_") })
            #expect(byName["sync_factor_user_cleanup"] != nil, "the sandbox's cleanup user is in every sub-org")
            // The sync user may delete credentials, not create them.
            let denied = try await w.submit(
                "/public/v1/submit/create_users", "ACTIVITY_TYPE_CREATE_USERS_V3", org: w.subOrg,
                .object(["users": .array([World.user("intruder", keys: [])])]), stamp: .p256(w.sync))
            #expect(
                denied.status == 403
                    && denied.json?["details"]?[0]?["turnkeyErrorCode"]?.stringValue == "PERMISSION_DENIED")
            let removed = try await w.submit(
                "/public/v1/submit/delete_oauth_providers", "ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS", org: w.subOrg,
                .object(["userId": .string(w.authUserId), "providerIds": .array([.string(w.providerId)])]),
                stamp: .p256(w.sync))
            #expect(
                removed.status == 200
                    && removed.json?["activity"]?["status"]?.stringValue == TurnkeyActivityStatus.completed)
            let again = try await w.submit(
                "/public/v1/submit/delete_oauth_providers", "ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS", org: w.subOrg,
                .object(["userId": .string(w.authUserId), "providerIds": .array([.string(w.providerId)])]),
                stamp: .p256(w.sync))
            #expect(again.status == 404)
            // The session key lives 5 minutes.
            w.harness.time.advance(byMillis: 301_000)
            let expired = try await w.submit(
                "/public/v1/submit/create_users", "ACTIVITY_TYPE_CREATE_USERS_V3", org: w.subOrg,
                .object(["users": .array([World.user("late", keys: [])])]), stamp: .p256(w.session))
            #expect(
                expired.status == 401
                    && expired.json?["details"]?[0]?["turnkeyErrorCode"]?.stringValue == "PUBLIC_KEY_NOT_FOUND")
        }
    }

    @Test(arguments: ["sync", "passkey", "breakGlass"]) func eachSignerDeletesTheSubOrg(_ signer: String) async throws {
        try await withWorld { w in
            let stamp: World.Stamp =
                switch signer {
                case "sync": .p256(w.sync)
                case "passkey": .passkey
                default: .secp256k1(w.account)
                }
            let deleted = try await w.delete(stamp: stamp)
            #expect(
                deleted.status == 200
                    && deleted.json?["activity"]?["status"]?.stringValue == TurnkeyActivityStatus.completed,
                "\(deleted)")
            #expect(!(try await w.harness.listPage(limit: "100", after: nil).contains(w.subOrg)))
            #expect(await w.harness.sandbox.details[w.subOrg] == nil)
        }
    }

    @Test func whoMayNotDelete() async throws {
        try await withWorld(syncPolicy: false, breakGlass: false) { w in
            var reply = try await w.delete(stamp: .p256(w.sync))
            #expect(reply.status == 403, "a sync user without its policy")
            reply = try await w.delete(stamp: .secp256k1(w.account))
            #expect(
                reply.status == 401
                    && reply.json?["details"]?[0]?["turnkeyErrorCode"]?.stringValue == "PUBLIC_KEY_NOT_FOUND")
            reply = try await w.delete(stamp: .p256(P256.generatePrivateKey(using: SeededRandom(seed: 5))))
            #expect(
                reply.status == 401
                    && reply.json?["details"]?[0]?["turnkeyErrorCode"]?.stringValue == "PUBLIC_KEY_NOT_FOUND")
            reply = try await w.delete(stamp: .p256(w.harness.apiKey))
            #expect(reply.status == 403, "the parent reads, it does not delete")
            reply = try await w.delete(stamp: .p256(w.sync))
            reply = try await w.submit(
                TurnkeyWire.deleteSubOrganizationPath, "ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION", org: w.subOrg,
                .object(["deleteWithoutExport": .bool(true)]), stamp: .p256(w.sync), fault: "unavailable")
            #expect(reply.status == 503, "the sandbox fault header answers before anything")
            // auth_user_main (the root quorum) may.
            reply = try await w.delete(stamp: .passkey)
            #expect(reply.status == 200)
        }
    }

    @Test func anOIDCLoginOpensASessionAndTheStateFileKeepsTheSubOrg() async throws {
        try await withWorld { w in
            let login = P256.generatePrivateKey(using: SeededRandom(seed: 9))
            let loginHex = World.hex(login)
            let now = w.harness.time.now / 1000
            let token = try SandboxOIDC.idToken(
                .init(
                    iss: OIDCProvider.google.issuer, aud: SandboxOIDC.googleClientId, sub: "1234", email: nil, iat: now,
                    exp: now + 3600, nonce: SHA256.hex(Array(loginHex.utf8))), provider: .google)
            let answer = try await w.submit(
                "/public/v1/submit/oauth_login", "ACTIVITY_TYPE_OAUTH_LOGIN", org: w.subOrg,
                .object([
                    "oidcToken": .string(token), "publicKey": .string(loginHex), "expirationSeconds": .string("300"),
                ]),
                stamp: .p256(w.harness.apiKey))
            #expect(answer.status == 200, "\(answer)")
            let made = try await w.submit(
                "/public/v1/submit/create_users", "ACTIVITY_TYPE_CREATE_USERS_V3", org: w.subOrg,
                .object(["users": .array([World.user("sync_factor_user_2", keys: [])])]), stamp: .p256(login))
            #expect(made.status == 200, "the login's session acts as auth_user_main")
            // The standalone server's state file keeps sub-orgs made this way.
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("state-\(UUID().uuidString).json")
                .path
            defer { try? FileManager.default.removeItem(atPath: path) }
            var file = SandboxStateFile(
                parentOrgId: SandboxHarness.parent, apiKeyFile: path + ".a", cleanupKeyFile: path + ".c", subOrgs: [],
                users: [:], missingDefaultUsersPerMille: 0, faults: .none, seed: 1)
            file.subOrgDetails = await w.harness.sandbox.details
            try file.save(to: path)
            let reloaded = try SandboxStateFile.loadOrCreate(path: path, subOrgCount: 0)
            #expect(reloaded.subOrgDetails[w.subOrg]?.users.map(\.userName).contains("sync_factor_user_2") == true)
        }
    }
}

extension JSONValue {
    subscript(index: Int) -> JSONValue? {
        guard case .array(let items) = self, items.indices.contains(index) else { return nil }
        return items[index]
    }
}
