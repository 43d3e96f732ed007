import BackupCrypto
import BackupModel
import Foundation
import Testing
import Turnkey

@Suite struct TurnkeyStampTests {
    static let body = try! TurnkeyActivityBody.deleteSubOrganization(
        subOrgId: "3c0f8b6e-1f2a-4d5e-9a7b-0c1d2e3f4a5b", timestampMs: 1_790_000_000_123)

    @Test func deleteBodyHasTheExactBytes() throws {
        #expect(
            Self.body.text
                == #"{"type":"ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION","timestampMs":"1790000000123","organizationId":"3c0f8b6e-1f2a-4d5e-9a7b-0c1d2e3f4a5b","parameters":{"deleteWithoutExport":true}}"#
        )
        let again = try TurnkeyActivityBody.deleteSubOrganization(
            subOrgId: "3c0f8b6e-1f2a-4d5e-9a7b-0c1d2e3f4a5b", timestampMs: 1_790_000_000_123)
        #expect(again.bytes == Self.body.bytes)
        // It is valid JSON with the documented members.
        let object = try #require(try JSONSerialization.jsonObject(with: Data(Self.body.bytes)) as? [String: Any])
        #expect(object["timestampMs"] as? String == "1790000000123")
        #expect((object["parameters"] as? [String: Bool])?["deleteWithoutExport"] == true)
    }

    @Test(arguments: ["", "a\"b", "a\\b", "has space", String(repeating: "a", count: 65), "ü"])
    func deleteBodyRefusesIdsThatWouldNeedEscaping(_ id: String) {
        #expect(throws: ConsoleError.self) {
            try TurnkeyActivityBody.deleteSubOrganization(subOrgId: id, timestampMs: 1)
        }
        do {
            _ = try TurnkeyActivityBody.deleteSubOrganization(subOrgId: id, timestampMs: 1)
        } catch { #expect(error.code == "invalid_suborg_id") }
    }

    @Test func secp256k1StampDecodesAndVerifies() throws {
        let key = Secp256k1.generateSecretKey(using: SeededRandom(seed: 3))
        let stamp = try TurnkeyStamp.sign(body: Self.body.bytes, with: Secp256k1StampSigner(secretKey: key))
        let header = stamp.headerValue
        #expect(!header.contains("=") && !header.contains("+") && !header.contains("/"))
        let json = try #require(Base64.decode(header, alphabet: .url))
        let text = String(decoding: json, as: UTF8.self)
        #expect(text.hasPrefix(#"{"publicKey":""#))
        #expect(text.hasSuffix(#"","scheme":"SIGNATURE_SCHEME_TK_API_SECP256K1"}"#))
        #expect(text.contains(#"","signature":"30"#))
        let decoded = try TurnkeyStamp(headerValue: header)
        #expect(decoded == stamp)
        #expect(decoded.publicKey == (try Secp256k1.publicKey(secretKey: key, compressed: true)))
        #expect(decoded.verify(body: Self.body.bytes) == .valid)
        // Independent check: secp256k1 over SHA-256 of the body bytes.
        #expect(
            Secp256k1.verify(
                derSignature: decoded.signature, digest: SHA256.hash(Self.body.bytes), publicKey: decoded.publicKey)
                == .valid)
        // One byte changed: no longer valid.
        var other = Self.body.bytes
        other[other.count - 3] ^= 1
        #expect(decoded.verify(body: other) == .mismatch)
        // Deterministic (RFC 6979).
        #expect(try TurnkeyStamp.sign(body: Self.body.bytes, with: Secp256k1StampSigner(secretKey: key)) == stamp)
    }

    @Test func p256StampDecodesAndVerifies() throws {
        let key = P256.generatePrivateKey(using: SeededRandom(seed: 4))
        let stamp = try TurnkeyStamp.sign(body: Self.body.bytes, with: P256StampSigner(privateKey: key))
        let decoded = try TurnkeyStamp(headerValue: stamp.headerValue)
        #expect(decoded.scheme == .p256)
        #expect(decoded.scheme.rawValue == "SIGNATURE_SCHEME_TK_API_P256")
        #expect(decoded.publicKey.count == 33)
        #expect(
            P256.verify(derSignature: decoded.signature, message: Self.body.bytes, publicKey: decoded.publicKey)
                == .valid)
        #expect(decoded.verify(body: Self.body.bytes) == .valid)
        #expect(decoded.verify(body: Array("{}".utf8)) == .mismatch)
    }

    @Test func schemeNames() {
        #expect(TurnkeyStamp.Scheme.secp256k1.rawValue == "SIGNATURE_SCHEME_TK_API_SECP256K1")
        #expect(TurnkeyStamp.Scheme.p256.rawValue == "SIGNATURE_SCHEME_TK_API_P256")
    }

    @Test(arguments: [
        "not base64!", Base64.encode(Array("[]".utf8), alphabet: .url, padding: false),
        Base64.encode(
            Array(#"{"publicKey":"02","signature":"30","scheme":"SIGNATURE_SCHEME_TK_API_P256"}"#.utf8), alphabet: .url),
        Base64.encode(
            Array(#"{"publicKey":"\#(String(repeating: "02", count: 33))","signature":"3000","scheme":"OTHER"}"#.utf8),
            alphabet: .url),
    ])
    func malformedStampsAreRefused(_ header: String) {
        do {
            _ = try TurnkeyStamp(headerValue: header)
            Issue.record("accepted \(header)")
        } catch { #expect(error.code == "invalid_stamp") }
    }
}
