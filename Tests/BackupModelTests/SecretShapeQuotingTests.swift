import BackupModel
import Foundation
import Testing

/// An error quotes what it was given only when none of it is secret-shaped: the whole text is
/// judged, so the first characters of a pasted key are withheld too.
struct SecretShapeQuotingTests {
    static let key = String(repeating: "0123456789abcdef", count: 4)

    @Test(
        "a secret is withheld even where the cut would hide its shape",
        arguments: [
            (key, 24),
            (stride(from: 0, to: 64, by: 16).map { String(key.dropFirst($0).prefix(16)) }.joined(separator: "-"), 24),
            (Data(repeating: 0x5A, count: 32).base64EncodedString().replacingOccurrences(of: "/", with: "_"), 40),
            ("eyJhbGciOiJSU0EtT0FFUC0yNTYiLCJlbmMiOiJBMjU2R0NNIn0.a2V5.aXY.Y2lwaGVydGV4dA.dGFn", 40),
            ("sbx.eyJiYWNrdXBJZCI6ImJhY2t1cF9hY2NvdW50XzAzIn0.c2lnbmF0dXJlLWJ5dGVz.", 8),
            ("bctl_" + String(repeating: "x", count: 40), 4),
        ])
    func secretsAreWithheld(text: String, limit: Int) {
        #expect(SecretShape.quoted(text, limit: limit) == "<withheld>")
        #expect(SecretShape.excerpt(text, limit: limit) == "<withheld>")
    }

    @Test func theCutAloneWouldHaveShownTheKey() {
        // Why the whole text is judged: 24 characters of a split key are 23 of its 64 digits
        // and no longer look like a key.
        let split = stride(from: 0, to: 64, by: 16).map { String(Self.key.dropFirst($0).prefix(16)) }
        let cut = String(split.joined(separator: "-").prefix(24))
        #expect(!SecretShape.appears(in: cut))
        #expect(SecretShape.quoted(split.joined(separator: "-"), limit: 24) == "<withheld>")
    }

    /// A message that names the token format keeps it: a bare `bctl_` holds no secret; a token
    /// quoted in backticks is withheld up to the backtick.
    @Test func aBarePrefixIsNotASecret() {
        let hint = "The operator token is malformed: expected `bctl_` followed by 43 base64url characters."
        #expect(SecretShape.redact(hint) == hint)
        #expect(!SecretShape.appears(in: "expected bctl_ or sbx. here"))
        let token = "bctl_" + String(repeating: "x", count: 43)
        #expect(SecretShape.redact("got `\(token)` instead") == "got `<withheld>` instead")
    }

    @Test func anythingElseIsCutAndQuoted() {
        #expect(SecretShape.quoted("production-eu", limit: 40) == "\"production-eu\"")
        #expect(SecretShape.quoted("Production EU West", limit: 10) == "\"Production\"")
        #expect(SecretShape.excerpt("tabel", limit: 40) == "tabel")
        let uuid = "3f2a9c1e-7b4d-4e8f-9a0b-1c2d3e4f5a6b"
        #expect(SecretShape.excerpt(uuid, limit: 8) == "3f2a9c1e")
    }

    /// A password in a URL (`--server https://user:pass@host`) is withheld; a user alone, and a
    /// URL without one, are kept.
    @Test func aURLPasswordIsWithheld() {
        #expect(
            SecretShape.redact("got https://ops:hunter2@console.internal:8443.")
                == "got https://<withheld>@console.internal:8443.")
        #expect(SecretShape.redact("at postgres://backupctl@db:5432/x") == "at postgres://backupctl@db:5432/x")
        #expect(!SecretShape.appears(in: "https://console.internal:8443/v1/ops/whoami"))
        #expect(SecretShape.appears(in: "set server http://a:b@127.0.0.1:1"))
    }
}
