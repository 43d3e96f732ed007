import BackupCrypto
import BackupModel
import Foundation
import SandboxIdentity
import Turnkey
import TurnkeySandbox

/// What a Turnkey activity came to, after the client's retries.
enum TurnkeyOutcome: Sendable {
    case completed(JSONValue)
    /// A refusal that retrying does not change (`PUBLIC_KEY_NOT_FOUND`, `ORGANIZATION_NOT_FOUND`,
    /// a policy), or transient failures on every attempt.
    case failed(status: Int, code: String?)

    var errorCode: String? {
        if case .failed(_, let code) = self { return code }
        return nil
    }
}

/// Who stamps a Turnkey request.
enum TurnkeyStamper: Sendable {
    /// A P-256 API key (`SIGNATURE_SCHEME_TK_API_P256`): the app backend's parent key, a
    /// sync factor, a session key.
    case p256(SecretBytes)
    /// The Backup Account Key as the break-glass user (`SIGNATURE_SCHEME_TK_API_SECP256K1`).
    case secp256k1(SecretBytes)
    /// A passkey (`X-Stamp-WebAuthn`).
    case passkey(credentialId: [UInt8], key: SecretBytes)
}

/// The app's Turnkey client, as Bedrock behaves: the body (and its `timestampMs`) fixed before
/// the retry loop, three attempts in all on 5xx, 429 and transport failures with full-jitter
/// back-off (250 ms base, 2 s cap, on the simulated clock), nothing retried on a 4xx.
struct TurnkeyCaller: Sendable {
    let transport: any SimulationTransport
    let parentOrgId: String
    let parentKey: SecretBytes
    let clock: @Sendable () -> Int64
    /// Moves the simulated clock on (back-off waits); a no-op over HTTP.
    let wait: @Sendable (Int64) -> Void

    static let attempts = 3

    /// The activity body: `type`, `timestampMs`, `organizationId`, `parameters` (and, for the
    /// add-factor activity, the service's `metadata.challenge`), no whitespace.
    static func body(
        type: String, timestampMs: Int64, organizationId: String, parameters: JSONValue, metadata: JSONValue? = nil
    )
        -> [UInt8]
    {
        var out = Array(#"{"type":"#.utf8)
        CanonicalJSON.append(string: type, to: &out)
        out += Array(#","timestampMs":"\#(timestampMs)","organizationId":"#.utf8)
        CanonicalJSON.append(string: organizationId, to: &out)
        out += Array(#","parameters":"#.utf8)
        SortedJSON.write(parameters, to: &out)
        if let metadata {
            out += Array(#","metadata":"#.utf8)
            SortedJSON.write(metadata, to: &out)
        }
        out += Array("}".utf8)
        return out
    }

    /// Submits an activity; `faults` names the sandbox fault of each attempt (planned by the
    /// simulator, so the world is the seed's).
    func submit(
        _ path: String, type: String, organizationId: String, parameters: JSONValue, stamper: TurnkeyStamper,
        faults: [String?], random: some RandomSource, metadata: JSONValue? = nil
    ) async -> TurnkeyOutcome {
        // A few milliseconds pass between activities, so no two bodies of a flow share a timestamp.
        wait(3)
        let body = Self.body(
            type: type, timestampMs: clock(), organizationId: organizationId, parameters: parameters, metadata: metadata
        )
        return await send(path, body: body, stamper: stamper, faults: faults, random: random)
    }

    /// Sends exact body bytes (stamped per attempt) with the retry rules.
    func send(_ path: String, body: [UInt8], stamper: TurnkeyStamper, faults: [String?], random: some RandomSource)
        async
        -> TurnkeyOutcome
    {
        var last = TurnkeyOutcome.failed(status: 0, code: nil)
        for attempt in 0..<Self.attempts {
            if attempt > 0 {
                let cap = min(2000, 250 << (attempt - 1))
                wait(Int64(random.uniform(UInt64(cap) + 1)))
            }
            var request = TurnkeySandbox.Request(
                path: path, stamp: nil, body: body, fault: faults.indices.contains(attempt) ? faults[attempt] : nil)
            switch stamper {
            case .p256(let key):
                request.stamp = try? TurnkeyStamp.sign(body: body, with: P256StampSigner(privateKey: key)).headerValue
            case .secp256k1(let key):
                request.stamp = try? TurnkeyStamp.sign(body: body, with: Secp256k1StampSigner(secretKey: key))
                    .headerValue
            case .passkey(let credentialId, let key):
                request.webAuthnStamp = try? TurnkeySandbox.webAuthnStamp(
                    credentialId: credentialId, body: body, privateKey: key)
            }
            guard let response = await transport.turnkey(request) else {
                last = .failed(status: 0, code: nil)
                continue
            }
            let json = FastJSON.parse(Array(response.body))
            if response.isSuccess {
                let activity = json?["activity"]
                guard activity?["status"]?.stringValue == TurnkeyActivityStatus.completed else {
                    return .failed(status: response.status, code: activity?["status"]?.stringValue)
                }
                if let result = activity?["result"] { return .completed(result) }
                return .completed(json ?? .null)
            }
            let code = json?["details"].flatMap { details -> String? in
                if case .array(let items) = details { return items.first?["turnkeyErrorCode"]?.stringValue }
                return nil
            }
            last = .failed(status: response.status, code: code)
            guard response.status >= 500 || response.status == 429 else { return last }
        }
        return last
    }

    /// A query (no activity): the decoded answer, or `nil`.
    func query(_ path: String, organizationId: String, stamper: TurnkeyStamper) async -> JSONValue? {
        let body = Array(#"{"organizationId":"\#(organizationId)"}"#.utf8)
        guard case .p256(let key) = stamper,
            let stamp = try? TurnkeyStamp.sign(body: body, with: P256StampSigner(privateKey: key)).headerValue,
            let response = await transport.turnkey(.init(path: path, stamp: stamp, body: body)), response.isSuccess
        else { return nil }
        return FastJSON.parse(Array(response.body))
    }
}
