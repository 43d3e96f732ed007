import Foundation
import Testing

@testable import BackupModel

@Suite("BackupMetadata wire forms")
struct BackupMetadataTests {
    static let id = "backup_account_039797dc9fec4e3d3f2f27173ba0faac160ee2f803954e8552c308da22ab40ab5c"
    static let manifest = String(repeating: "ab", count: 32)
    static let mainKey = Base64.encode([0x04] + [UInt8](repeating: 1, count: 64))
    static let syncKey = Base64.encode([0x04] + [UInt8](repeating: 2, count: 64))

    /// What the Backup Service keeps in S3.
    static let stored = """
        {
          "id": "\(id)",
          "manifestHash": "\(manifest)",
          "factors": [
            {"id": "f1", "createdAt": "2026-05-01T10:00:00.123456789Z",
             "kind": {"kind": "PASSKEY", "label": "iCloud Keychain",
                      "webauthnCredential": {"cred": {"cred_id": "-_8", "cred": {"type_": "ES256"}, "counter": 3,
                                                      "user_verified": true, "backup_eligible": false}},
                      "registration": {"rp_id": "world.org", "flags": [1, 2.5, null]}}},
            {"id": "f2", "createdAt": "2026-05-01T12:00:00+02:00",
             "kind": {"kind": "OIDC_ACCOUNT", "turnkeyProviderId": "tp-1",
                      "account": {"kind": "GOOGLE", "sub": "104512345", "email": "jane@gmail.com"}}},
            {"id": "f3", "createdAt": "2026-05-01T10:00:00Z",
             "kind": {"kind": "EC_KEYPAIR", "publicKey": "\(mainKey)"}}
          ],
          "syncFactors": [
            {"id": "s1", "createdAt": "2026-05-02T10:00:00Z", "kind": {"kind": "EC_KEYPAIR", "publicKey": "\(syncKey)"}}
          ],
          "keys": [
            {"kind": "PRF", "encryptedKey": "aa01"},
            {"kind": "ICLOUD", "encryptedKey": "bb02"},
            {"kind": "TURNKEY", "encryptedKey": "cc03", "turnkeyAccountId": "sub-org-1",
             "turnkeyUserId": "user-1", "turnkeyPrivateKeyId": "pk-1"},
            {"kind": "TURNKEY", "encryptedKey": "dd04", "turnkeyAccountId": "sub-org-2",
             "turnkeyUserId": "user-2", "turnkeyPrivateKeyId": "pk-2"},
            {"kind": "TURNKEY", "encryptedKey": "ee05", "turnkeyAccountId": "sub-org-1",
             "turnkeyUserId": "user-3", "turnkeyPrivateKeyId": "pk-3"}
          ]
        }
        """

    /// What the service sends to clients.
    static let exported = """
        {"id": "\(id)", "manifestHash": "\(manifest)",
         "factors": [
           {"id": "f1", "createdAt": 1777629600, "kind": {"kind": "PASSKEY", "label": "Phone", "credentialId": "AQIDBA"}},
           {"id": "f2", "createdAt": 1777629601,
            "kind": {"kind": "OIDC_ACCOUNT", "turnkeyProviderId": "tp-1",
                     "account": {"kind": "APPLE", "maskedEmail": "j***@icloud.com"}}}
         ],
         "syncFactors": [],
         "keys": [{"kind": "PRF", "encryptedKey": "aa01"}]}
        """

    func decode(_ text: String) throws(ConsoleError) -> BackupMetadata {
        try BackupMetadata.decode(Data(text.utf8))
    }

    /// JSON equality that ignores key order and whitespace.
    func json(_ data: Data) throws -> NSObject {
        try #require(try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) as? NSObject)
    }

    @Test("the stored form decodes")
    func stored() throws {
        let m = try decode(Self.stored)
        #expect(m.id == Self.id && m.manifestHash == Self.manifest)
        #expect(m.factors.count == 3 && m.syncFactors.count == 1 && m.keys.count == 5)

        guard case .passkey(let passkey) = m.factors[0].kind else {
            Issue.record("not a passkey")
            return
        }
        #expect(passkey.credentialId == "-_8")
        #expect(passkey.label == "iCloud Keychain")
        #expect(passkey.webauthnCredential?["cred"]?["counter"] == .int(3))
        #expect(passkey.webauthnCredential?["cred"]?["user_verified"] == .bool(true))
        #expect(passkey.registration?["rp_id"] == .string("world.org"))
        #expect(m.factors[0].createdAt.seconds == 1_777_629_600)

        guard case .oidcAccount(let oidc) = m.factors[1].kind else {
            Issue.record("not OIDC")
            return
        }
        #expect(oidc.provider == .google)
        #expect(oidc.sub == "104512345")
        #expect(oidc.account.maskedEmail == "j***@gmail.com")
        #expect(oidc.turnkeyProviderId == "tp-1")
        #expect(m.factors[1].createdAt.seconds == 1_777_629_600)  // 12:00+02:00 = 10:00Z

        #expect(m.factors[2].kind == .ecKeypair(publicKey: Self.mainKey))
        #expect(
            m.keys[2]
                == .turnkey(
                    TurnkeyKey(
                        encryptedKey: "cc03", turnkeyAccountId: "sub-org-1", turnkeyUserId: "user-1",
                        turnkeyPrivateKeyId: "pk-1")))
        #expect(m.keys.map(\.tag) == ["PRF", "ICLOUD", "TURNKEY", "TURNKEY", "TURNKEY"])
    }

    @Test("lookup keys: main then sync, exactly as the service writes them")
    func lookupKeys() throws {
        let m = try decode(Self.stored)
        #expect(
            m.lookupKeys.map(\.rawValue) == [
                "MAIN#PK|-_8",
                "MAIN#OIDC|https://accounts.google.com|104512345",
                "MAIN#EC_KEYPAIR|\(Self.mainKey)",
                "SYNC#EC_KEYPAIR|\(Self.syncKey)",
            ])
    }

    @Test("Turnkey sub-org ids are deduplicated in order")
    func subOrgs() throws {
        #expect(try decode(Self.stored).turnkeySubOrgIds == ["sub-org-1", "sub-org-2"])
        #expect(try decode(Self.exported).turnkeySubOrgIds.isEmpty)
    }

    @Test("the email is never kept, only its mask")
    func emailDropped() throws {
        let m = try decode(Self.stored)
        for form in [MetadataForm.stored, .exported] {
            let text = String(decoding: m.encoded(form), as: UTF8.self)
            #expect(!text.contains("jane@gmail.com"))
            #expect(text.contains("j***@gmail.com"))
        }
    }

    @Test("stored → stored round trip is semantically identical and stable")
    func storedRoundTrip() throws {
        let once = try decode(Self.stored).encoded(.stored)
        let again = try decode(String(decoding: once, as: UTF8.self))
        #expect(again == (try decode(Self.stored)))
        #expect(try json(again.encoded(.stored)) == json(once))
        // Apart from email → maskedEmail, the stored text is what came in (webauthn object, RFC 3339 text).
        var original = try #require(try JSONSerialization.jsonObject(with: Data(Self.stored.utf8)) as? [String: Any])
        var factors = try #require(original["factors"] as? [[String: Any]])
        var kind = try #require(factors[1]["kind"] as? [String: Any])
        kind["account"] = ["kind": "GOOGLE", "sub": "104512345", "maskedEmail": "j***@gmail.com"]
        factors[1]["kind"] = kind
        original["factors"] = factors
        let expected = try JSONSerialization.data(withJSONObject: original)
        #expect(try json(once) == json(expected))
    }

    @Test("the exported form decodes, and exported → exported round trips")
    func exportedRoundTrip() throws {
        let m = try decode(Self.exported)
        guard case .passkey(let passkey) = m.factors[0].kind else {
            Issue.record("not a passkey")
            return
        }
        #expect(passkey.credentialId == "AQIDBA")
        #expect(passkey.webauthnCredential == nil)
        #expect(m.factors[0].createdAt.seconds == 1_777_629_600)
        guard case .oidcAccount(let oidc) = m.factors[1].kind else {
            Issue.record("not OIDC")
            return
        }
        #expect(oidc.sub == nil && oidc.provider == .apple && oidc.account.maskedEmail == "j***@icloud.com")
        // No sub, no OIDC lookup key.
        #expect(m.lookupKeys.map(\.rawValue) == ["MAIN#PK|AQIDBA"])
        #expect(try json(m.encoded(.exported)) == json(Data(Self.exported.utf8)))
    }

    @Test("stored → exported uses credentialId, unix seconds and drops the sub")
    func storedToExported() throws {
        let exported = try decode(Self.stored).encoded(.exported)
        let object = try #require(try JSONSerialization.jsonObject(with: exported) as? [String: Any])
        let factors = try #require(object["factors"] as? [[String: Any]])
        #expect(factors[0]["createdAt"] as? Int == 1_777_629_600)
        let passkey = try #require(factors[0]["kind"] as? [String: Any])
        #expect(passkey["credentialId"] as? String == "-_8")
        #expect(passkey["webauthnCredential"] == nil)
        let oidc = try #require(factors[1]["kind"] as? [String: Any])
        let account = try #require(oidc["account"] as? [String: Any])
        #expect(account["sub"] == nil)
        // And it decodes again to the same factors (the sub aside).
        let back = try BackupMetadata.decode(exported)
        #expect(back.factors[0] == (try decode(Self.stored)).factors[0])
    }

    @Test("an exported passkey written in the stored form gets a minimal webauthnCredential")
    func exportedToStored() throws {
        let stored = try decode(Self.exported).encoded(.stored)
        let back = try BackupMetadata.decode(stored)
        guard case .passkey(let passkey) = back.factors[0].kind else {
            Issue.record("not a passkey")
            return
        }
        #expect(passkey.credentialId == "AQIDBA")
        #expect(passkey.webauthnCredential?["cred"]?["cred_id"] == .string("AQIDBA"))
    }

    @Test(
        "credential ids are normalised to base64url without padding",
        arguments: ["-_8", "+/8=", "+/8", "-_8="])
    func credentialIdNormalised(raw: String) throws {
        let text = Self.exported.replacingOccurrences(of: "\"AQIDBA\"", with: "\"\(raw)\"")
        let m = try decode(text)
        #expect(m.lookupKeys.first?.rawValue == "MAIN#PK|-_8")
    }

    @Test(
        "bad metadata is one error naming where",
        arguments: [
            ("{}", "id"),
            (#"{"id": "x", "factors": [], "syncFactors": [], "keys": []}"#, "manifestHash"),
            ("not json", "Invalid metadata JSON"),
        ])
    func invalid(text: String, mention: String) {
        do {
            _ = try decode(text)
            Issue.record("accepted")
        } catch {
            #expect(error.code == "invalid_metadata")
            #expect(error.message.contains(mention), "\(error.message)")
        }
    }

    @Test(
        "bad factors are rejected",
        arguments: [
            (#""kind": "PASSKEY", "label": "x""#, "credentialId"),
            (#""kind": "PASSKEY", "credentialId": "!!""#, "base64url"),
            (#""kind": "FIDO""#, "FIDO"),
            (#""kind": "OIDC_ACCOUNT", "account": {"kind": "FACEBOOK"}"#, "factors[0]"),
        ])
    func badFactors(kind: String, mention: String) {
        let text = """
            {"id": "x", "manifestHash": "y", "syncFactors": [], "keys": [],
             "factors": [{"id": "f", "createdAt": 1, "kind": {\(kind)}}]}
            """
        do {
            _ = try decode(text)
            Issue.record("accepted")
        } catch {
            #expect(error.code == "invalid_metadata")
            #expect(error.message.contains(mention), "\(error.message)")
        }
    }

    @Test("a bad createdAt names the field")
    func badCreatedAt() {
        let text = Self.exported.replacingOccurrences(of: "1777629600", with: "\"last tuesday\"")
        do {
            _ = try decode(text)
            Issue.record("accepted")
        } catch {
            #expect(error.message.contains("createdAt"), "\(error.message)")
        }
    }

    @Test("OIDC issuers and email masking")
    func oidcHelpers() {
        #expect(OIDCProvider(name: "google") == .google)
        #expect(OIDCProvider(name: "https://appleid.apple.com/") == .apple)
        #expect(OIDCProvider(name: "https://example.com") == nil)
        #expect(OIDCProvider.google.issuer == "https://accounts.google.com")
        #expect(OIDCAccount.mask("jane@gmail.com") == "j***@gmail.com")
        #expect(OIDCAccount.mask("nobody") == "***")
        #expect(OIDCAccount.mask("@x.com") == "***")
    }
}
