import BackupCrypto
import BackupModel
import Foundation
import Testing

@testable import Turnkey

@Suite("list_suborgs fast decoding and prepared signers")
struct WireTests {
    @Test(
        "the fast path reads the plain shape and agrees with JSONDecoder",
        arguments: [
            #"{"organizationIds":["a-1","b-2"]}"#, #" { "organizationIds" : [ "a-1" , "b-2" ] } "#,
            #"{"organizationIds":[]}"#, "{\n  \"organizationIds\": [\n    \"x\"\n  ]\n}\n",
        ])
    func fastPath(text: String) throws {
        let bytes = Array(text.utf8)
        let fast = try #require(TurnkeyWire.organizationIds(bytes))
        #expect(fast == TurnkeyWire.decode(TurnkeyWire.ListSubOrgsResponse.self, bytes)?.organizationIds)
    }

    @Test(
        "anything else falls back to the general decoder",
        arguments: [
            #"{"organizationIds":["a\"b"]}"#, #"{"organizationIds":["a"],"next":"x"}"#, #"{"other":[]}"#,
            #"{"organizationIds":["a",]}"#, #"{"organizationIds":["a"]"#, #"{"organizationIds":["a"]}x"#, "",
        ])
    func fallback(text: String) {
        #expect(TurnkeyWire.organizationIds(Array(text.utf8)) == nil)
    }

    @Test("a prepared API key stamps like the plain one (same key, verifying signature)")
    func preparedSigner() throws {
        let key = P256.generatePrivateKey(using: SeededRandom(seed: 4))
        let plain = TurnkeySigner.apiKey(key)
        let prepared = plain.prepared()
        guard case .preparedAPIKey = prepared else {
            Issue.record("not prepared")
            return
        }
        let body = Array(#"{"organizationId":"x"}"#.utf8)
        let stamp = try TurnkeyStamp(headerValue: try prepared.stamp(body))
        #expect(stamp.scheme == .p256)
        #expect(Hex.encode(stamp.publicKey) == plain.publicKeyHex())
        #expect(stamp.verify(body: body) == .valid)
        #expect(TurnkeySigner.prestamped("s").prepared().description == "pre-stamped request")
    }
}
