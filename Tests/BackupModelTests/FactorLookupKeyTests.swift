import Testing

@testable import BackupModel

@Suite("FactorLookupKey")
struct FactorLookupKeyTests {
    @Test(
        "parse and print every kind",
        arguments: [
            ("MAIN#PK|AQIDBA", FactorScope.main, LookupFactor.passkey(credentialId: "AQIDBA"), "PK"),
            ("SYNC#PK|-_8", .sync, .passkey(credentialId: "-_8"), "PK"),
            (
                "MAIN#OIDC|https://accounts.google.com|104512345", .main,
                .oidc(issuer: "https://accounts.google.com", sub: "104512345"), "OIDC"
            ),
            (
                "MAIN#OIDC|https://appleid.apple.com|001.abc|x", .main,
                .oidc(issuer: "https://appleid.apple.com", sub: "001.abc|x"), "OIDC"
            ),
            ("MAIN#EC_KEYPAIR|BAEC+/w==", .main, .ecKeypair(publicKey: "BAEC+/w=="), "EC_KEYPAIR"),
            ("SYNC#EC_KEYPAIR|BAEC", .sync, .ecKeypair(publicKey: "BAEC"), "EC_KEYPAIR"),
        ])
    func roundTrip(text: String, scope: FactorScope, factor: LookupFactor, kind: String) throws {
        let key = try FactorLookupKey(parsing: text)
        #expect(key.scope == scope)
        #expect(key.factor == factor)
        #expect(key.kindTag == kind)
        #expect(key.rawValue == text)
        #expect(key.description == text)
        #expect(FactorLookupKey(scope: scope, factor: factor) == key)
        #expect(FactorLookupKey(scope: scope, factor: factor).rawValue == text)
    }

    @Test(
        "errors name what was expected",
        arguments: [
            ("", "SCOPE#KIND"),
            ("PK|abc", "SCOPE#KIND"),
            ("main#PK|abc", "MAIN or SYNC"),
            ("BOTH#PK|abc", "MAIN or SYNC"),
            ("MAIN#PK", "KIND|value"),
            ("MAIN#PK|", "empty"),
            ("MAIN#OIDC|https://accounts.google.com", "OIDC|<issuer>|<sub>"),
            ("MAIN#OIDC|https://accounts.google.com|", "OIDC|<issuer>|<sub>"),
            ("MAIN#FIDO|abc", "PK, OIDC or EC_KEYPAIR"),
        ])
    func errors(text: String, mention: String) {
        do {
            _ = try FactorLookupKey(parsing: text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.code == "invalid_lookup_key")
            #expect(error.message.contains(mention), "\(error.message)")
        }
    }

    @Test("keys sort by their text and hash by value")
    func ordering() throws {
        let keys = try ["SYNC#PK|a", "MAIN#PK|b", "MAIN#EC_KEYPAIR|c"].map { text throws(ConsoleError) in
            try FactorLookupKey(parsing: text)
        }
        #expect(keys.sorted().map(\.rawValue) == ["MAIN#EC_KEYPAIR|c", "MAIN#PK|b", "SYNC#PK|a"])
        #expect(Set(keys + keys).count == 3)
    }
}
