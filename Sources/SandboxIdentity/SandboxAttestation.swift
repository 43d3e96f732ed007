import BackupCrypto
import BackupModel
import Foundation

/// The sandbox's stand-in for the attestation gateway's tokens (`attestation-token` header).
///
/// Production tokens are ES256 JWTs from `attestation.worldcoin.org`, checked against the
/// gateway's JWKS; the sandbox signs and checks them with a sandbox gateway key
/// (``SandboxKeys``). The claims and the request hash are the service's own: `pass == true`,
/// `exp` not passed, `iat` not in the future, `iss`, `aud`, and `jti` =
/// `sha256_hex({"body": body with keys sorted and nulls dropped, "method", "pathUri"})`.
public enum SandboxAttestation {
    public static let header = "attestation-token"
    public static let issuer = "attestation.worldcoin.org"
    public static let audience = "toolsforhumanity.com"
    public static let keyId = "sandbox-attestation"
    static let keyLabel = "attestation-gateway"

    /// The claims of a gateway token.
    public struct Claims: Codable, Sendable {
        public var iss: String?
        public var aud: String?
        public var jti: String?
        public var pass: Bool?
        public var iat: Int64?
        public var exp: Int64?
        public var out: String?
    }

    /// Why a token was refused: the service's three codes.
    public enum Failure: Error, Sendable, Equatable {
        /// `invalid_attestation_token` (bad token, key, signature, pass, issuer, not yet valid).
        case invalidToken
        /// `invalid_attestation_token_claim` with the claim's message (jti, exp, aud).
        case invalidClaim(String)
        /// The body is not JSON: the request hash cannot be computed (`internal_server_error`).
        case unhashableBody
    }

    /// A passing token for one request, as the app's native provider would obtain it.
    public static func token(method: String, path: String, body: [UInt8]?, now: Int64, lifetime: Int64 = 300)
        throws(ConsoleError) -> String
    {
        guard let jti = requestHash(method: method, path: path, body: body) else {
            throw .invalid("invalid_body", "An attestation token needs a JSON body to hash.")
        }
        let claims = Claims(
            iss: issuer, aud: audience, jti: jti, pass: true, iat: now, exp: now + lifetime, out: "pass")
        let header = JWS.json(["alg": "ES256", "kid": keyId, "typ": "JWT"])
        return try JWS.sign(header: header, payload: JWS.json(claims), privateKey: SandboxKeys.p256(keyLabel))
    }

    /// The service's check of a token for one request, in its order.
    public static func verify(_ token: String, method: String, path: String, body: [UInt8]?, now: Int64) -> Failure? {
        guard let parsed = JWS.parse(token), parsed.header["kid"]?.stringValue == keyId,
            JWS.verify(parsed, publicKey: SandboxKeys.p256Public(keyLabel)),
            let claims = try? JSONDecoder().decode(Claims.self, from: Data(parsed.payload))
        else { return .invalidToken }
        guard claims.pass == true else { return .invalidToken }
        guard let exp = claims.exp, exp >= now else {
            return .invalidClaim("Invalid attestation token claim: Token expired or expires at claim.")
        }
        guard let iat = claims.iat, iat <= now else { return .invalidToken }
        guard claims.iss == issuer else { return .invalidToken }
        guard claims.aud == audience else {
            return .invalidClaim("Invalid attestation token claim: Audience claim is not valid.")
        }
        guard let jti = claims.jti else {
            return .invalidClaim("Invalid attestation token claim: JTI claim (request hash) is not valid.")
        }
        guard let expected = requestHash(method: method, path: path, body: body) else { return .unhashableBody }
        guard jti == expected else {
            return .invalidClaim("Invalid attestation token claim: JTI claim (request hash) is not valid.")
        }
        return nil
    }

    /// `sha256_hex` of `{"body": …, "method": …, "pathUri": …}` with the body's keys sorted
    /// recursively and its nulls dropped (no `body` member for an empty body); `nil` when the body
    /// is not JSON.
    public static func requestHash(method: String, path: String, body: [UInt8]?) -> String? {
        var out: [UInt8] = Array("{".utf8)
        if let body, !body.isEmpty {
            guard let value = FastJSON.parse(Array(body)) else { return nil }
            out += Array(#""body":"#.utf8)
            SortedJSON.write(value, to: &out, dropNulls: true)
            out += Array(",".utf8)
        }
        out += Array(#""method":"#.utf8)
        CanonicalJSON.append(string: method, to: &out)
        out += Array(#","pathUri":"#.utf8)
        CanonicalJSON.append(string: path, to: &out)
        out += Array("}".utf8)
        return SHA256.hex(out)
    }
}

/// serde_json's compact output of a value with object keys sorted (and, for the attestation
/// request hash, null members dropped).
public enum SortedJSON {
    public static func write(_ value: JSONValue, to out: inout [UInt8], dropNulls: Bool = false) {
        switch value {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += Array((b ? "true" : "false").utf8)
        case .int(let i): out += Array(String(i).utf8)
        case .double(let d): out += Array(String(d).utf8)
        case .string(let s): CanonicalJSON.append(string: s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(item, to: &out, dropNulls: dropNulls)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            var first = true
            for key in members.keys.sorted() {
                guard let member = members[key], !(dropNulls && member == .null) else { continue }
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                CanonicalJSON.append(string: key, to: &out)
                out.append(UInt8(ascii: ":"))
                write(member, to: &out, dropNulls: dropNulls)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    public static func bytes(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        write(value, to: &out)
        return out
    }
}
