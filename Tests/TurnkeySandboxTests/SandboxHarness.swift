import BackupCrypto
import BackupModel
import Foundation
import Turnkey

@testable import TurnkeySandbox

/// A sandbox server on an ephemeral loopback port with a parent API key, a cleanup key that
/// is a user of every sub-org, and one sub-org whose only deleting user is a break-glass user
/// (the Backup Account Key of `rootKey`, secp256k1). Requests go over real HTTP.
final class SandboxHarness: @unchecked Sendable {
    static let parent = "00000000-0000-4000-8000-0000000000aa"

    let apiKey: SecretBytes
    let cleanupKey: SecretBytes
    let rootKey: RootKey
    let breakGlass: Secp256k1StampSigner
    let subOrgs: [String]
    /// The sub-org with only `auth_user_main` and the break-glass user.
    let breakGlassOrg: String
    let time: ManualTime
    let sandbox: TurnkeySandbox
    let server: SandboxServer
    let transport = HTTPClientTransport()

    /// - Parameter virtualTime: sandbox time moves only when the test advances it (outages,
    ///   rate limits); otherwise real time (latency).
    init(subOrgCount: Int = 10, faults: SandboxFaults = .none, virtualTime: Bool = true) async throws {
        let rng = SeededRandom(seed: 42)
        apiKey = P256.generatePrivateKey(using: rng)
        cleanupKey = P256.generatePrivateKey(using: rng)
        rootKey = RootKey(version: .v1, secret: rng.secretBytes(32))
        breakGlass = try Secp256k1StampSigner(rootKey: rootKey)
        subOrgs = (0..<subOrgCount).map { _ in rng.uuid() }.sorted()
        breakGlassOrg = subOrgs[0]
        let time = ManualTime(1_790_000_000_000)
        self.time = time
        sandbox = TurnkeySandbox(
            parentOrgId: Self.parent, directory: try MemoryDirectory(subOrgs),
            parentUsers: [try SandboxTenant.user("api", apiKey, canDelete: false)],
            defaultSubOrgUsers: [try SandboxTenant.user("sync_factor_user_cleanup", cleanupKey, canDelete: true)],
            faults: faults, timing: virtualTime ? .virtual(time) : .system, seed: 7)
        let breakGlassKey = Hex.encode(try breakGlass.compressedPublicKey())
        await sandbox.setUsers(
            [
                SandboxUser(
                    name: "auth_user_main", publicKey: "02" + String(repeating: "ab", count: 32),
                    scheme: TurnkeyStamp.Scheme.p256.rawValue, canDelete: false),
                SandboxUser.breakGlass(publicKeyHex: breakGlassKey),
            ], of: breakGlassOrg)
        server = try await SandboxServer.start(sandbox)
    }

    func stop() async { await server.stop() }

    /// POSTs `body` stamped over `stampedBytes` (the body itself unless a test tampers).
    func post(
        _ path: String, _ body: [UInt8], signer: some TurnkeyStampSigner, stampedBytes: [UInt8]? = nil
    ) async throws -> TurnkeyHTTPResponse {
        let stamp = try TurnkeyStamp.sign(body: stampedBytes ?? body, with: signer).headerValue
        return try await transport.send(
            TurnkeyHTTPRequest(baseURL: server.baseURL, path: path, body: body, stamp: stamp, timeoutMillis: 60_000))
    }

    func whoami(_ org: String, signer: some TurnkeyStampSigner) async throws -> TurnkeyHTTPResponse {
        try await post(
            TurnkeyWire.whoamiPath, TurnkeyWire.encode(TurnkeyWire.OrganizationQuery(organizationId: org)),
            signer: signer)
    }

    func delete(_ org: String, timestampMs: Int64 = 1_790_000_000_000, signer: some TurnkeyStampSigner) async throws
        -> TurnkeyHTTPResponse
    {
        let body = try TurnkeyActivityBody.deleteSubOrganization(subOrgId: org, timestampMs: timestampMs)
        return try await post(TurnkeyWire.deleteSubOrganizationPath, body.bytes, signer: signer)
    }

    func listPage(limit: String?, after: String?) async throws -> [String] {
        let request = TurnkeyWire.ListSubOrgsRequest(
            organizationId: Self.parent, paginationOptions: TurnkeyWire.PaginationOptions(limit: limit, after: after))
        let response = try await post(TurnkeyWire.listSubOrgsPath, TurnkeyWire.encode(request), signer: api)
        guard let page = TurnkeyWire.decode(TurnkeyWire.ListSubOrgsResponse.self, response.body) else {
            throw HarnessError("list_suborgs answered \(response.status)")
        }
        return page.organizationIds
    }

    var api: P256StampSigner { P256StampSigner(privateKey: apiKey) }
    var cleanup: P256StampSigner { P256StampSigner(privateKey: cleanupKey) }

    func client(policy: TurnkeyRetryPolicy = TurnkeyRetryPolicy()) -> TurnkeyClient {
        TurnkeyClient(
            baseURL: server.baseURL, transport: transport, policy: policy, rps: 10_000, timing: .virtual(time),
            random: SeededRandom(seed: 1))
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension TurnkeyHTTPResponse {
    var payload: TurnkeyErrorPayload? { TurnkeyWire.decode(TurnkeyErrorPayload.self, body) }
    var errorCode: String? { payload?.details?.first?.turnkeyErrorCode }
    var activity: TurnkeyWire.Activity? { TurnkeyWire.decode(TurnkeyWire.ActivityResponse.self, body)?.activity }
    var classified: TurnkeyError { TurnkeyError.classify(status: status, body: body, retryAfterMillis: nil) }
}
