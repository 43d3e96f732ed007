import Access
import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import Recovery
import Testing

/// Each bad input: the service's code, and nothing changed in the store.
@Suite struct ResetBadInputTests {
    /// A backup `A` with a begun reset, a second backup `B` with its own, both in `sandbox`.
    final class Scene {
        let f: Fixture
        let service: ResetService
        let keyA = rootKey("42")
        let keyB = rootKey("43")
        let idA: BackupAccountID
        let idB: BackupAccountID
        let a: ResetChallenge
        let b: ResetChallenge

        init() throws {
            f = try Fixture()
            service = f.service()
            idA = try f.addBackup(keyA)
            idB = try f.addBackup(keyB, subOrgs: ["suborg-c"])
            a = try service.begin(backupAccountId: idA.rawValue, session: f.session)
            b = try service.begin(backupAccountId: idB.rawValue, session: f.session)
        }

        func snapshot() throws -> Fixture.Snapshot {
            try f.snapshot(ids: [idA, idB], tokenHashes: [a.tokenHash, b.tokenHash])
        }

        /// Runs `complete` and checks the code and that nothing changed.
        func expectRefused(
            _ code: String, token: SecretBytes? = nil, signature: String, backupAccountId: String? = nil,
            session: Session? = nil, sourceLocation: SourceLocation = #_sourceLocation
        ) throws {
            let before = try snapshot()
            let error = consoleError {
                _ = try service.complete(
                    token: token ?? a.token, signature: signature, backupAccountId: backupAccountId,
                    session: session ?? f.session)
            }
            #expect(error?.code == code, sourceLocation: sourceLocation)
            #expect(error.map { $0.kind != .internalError } == true, sourceLocation: sourceLocation)
            #expect(try snapshot() == before, sourceLocation: sourceLocation)
        }

        var goodSignature: String { (try? UserRecovery.signChallenge(a.challenge, rootKey: keyA)) ?? "" }
    }

    @Test func notBase64AndDERGarbageAreInvalidSignature() throws {
        let s = try Scene()
        try s.expectRefused("invalid_signature", signature: "not base64!")
        try s.expectRefused("invalid_signature", signature: "")
        try s.expectRefused("invalid_signature", signature: String(s.goodSignature.dropLast()))
        try s.expectRefused("invalid_signature", signature: Base64.encode([0x30, 0x03, 0x02, 0x01, 0x01]))
        try s.expectRefused("invalid_signature", signature: Base64.encode(Array(repeating: 0x41, count: 70)))
    }

    @Test func wrongKeyWrongChallengeAndHighSFailVerification() throws {
        let s = try Scene()
        // A valid signature by another key (B's) over A's challenge.
        try s.expectRefused(
            "signature_verification_error", signature: try UserRecovery.signChallenge(s.a.challenge, rootKey: s.keyB))
        // A valid signature by A's key over another backup's challenge.
        try s.expectRefused(
            "signature_verification_error", signature: try UserRecovery.signChallenge(s.b.challenge, rootKey: s.keyA))
        // B's own valid proof presented with A's token.
        try s.expectRefused(
            "signature_verification_error", signature: try UserRecovery.signChallenge(s.b.challenge, rootKey: s.keyB))
        // The high-S twin of a valid signature: the service rejects it, so do we.
        let der = try #require(Base64.decode(s.goodSignature, alphabet: .standard))
        try s.expectRefused("signature_verification_error", signature: Base64.encode(try highS(der)))
    }

    @Test func tokenProblems() throws {
        let s = try Scene()
        let good = s.goodSignature
        try s.expectRefused("invalid_reset_token", token: SecretBytes(Array("rst_short".utf8)), signature: good)
        try s.expectRefused("invalid_reset_token", token: SecretBytes([]), signature: good)
        try s.expectRefused(
            "not_found", token: ResetToken.generate(using: SeededRandom(seed: 1234)), signature: good)
        // Another backup named by the caller.
        try s.expectRefused(
            "invalid_challenge_context", signature: good, backupAccountId: s.idB.rawValue)
        try s.expectRefused("invalid_backup_account_id", signature: good, backupAccountId: "backup_account_12")
    }

    @Test func tokenFromAnotherTenantIsAContextMismatch() throws {
        let s = try Scene()
        let other = try s.f.otherTenant()
        let idC = try s.f.addBackup(rootKey("45"), tenant: other.tenantName)
        let c = try s.service.begin(backupAccountId: idC.rawValue, session: other)
        let signature = try UserRecovery.signChallenge(c.challenge, rootKey: rootKey("45"))
        // Tenant B's token in tenant A, and tenant A's token in tenant B.
        try s.expectRefused("invalid_challenge_context", token: c.token, signature: signature)
        try s.expectRefused("invalid_challenge_context", signature: s.goodSignature, session: other)
        let otherBefore = try s.f.snapshot(ids: [idC], tokenHashes: [c.tokenHash], tenant: other.tenantName)
        #expect(otherBefore.backups == [idC.rawValue])
    }

    @Test func tokenForAnotherOperationIsAContextMismatch() throws {
        let s = try Scene()
        let token = ResetToken.generate(using: SeededRandom(seed: 77))
        let challenge = [UInt8](repeating: 7, count: 32)
        try s.f.store.insertResetChallenge(
            ResetChallengeRecord(
                tokenHash: try ResetToken.hash(token), tenant: s.f.session.tenantName, backupId: s.idA.rawValue,
                context: "delete_backup", challenge: challenge, createdAt: s.f.clock.seconds,
                expiresAt: s.f.clock.seconds + 60),
            audit: s.f.session.audit("test.insert"))
        try s.expectRefused(
            "invalid_challenge_context", token: token,
            signature: try UserRecovery.signChallenge(challenge, rootKey: s.keyA))
    }

    @Test func expiredToken() throws {
        let s = try Scene()
        s.f.time.advance(byMillis: 900_000)
        // At exactly the expiry second it is still valid; one second later it is not.
        _ = try s.service.preflight(token: s.a.token, signature: s.goodSignature, session: s.f.session)
        s.f.time.advance(byMillis: 1000)
        try s.expectRefused("token_expired", signature: s.goodSignature)
    }

    @Test func reusedToken() throws {
        let s = try Scene()
        let good = s.goodSignature
        _ = try s.service.complete(token: s.a.token, signature: good, session: s.f.session)
        // As the service: with the backup gone the replay is not_found (existence is checked before use) …
        try s.expectRefused("not_found", signature: good)
        // … and once the user re-creates the backup (same Root Key, same ID) it is already_used.
        try s.f.addBackup(s.keyA)
        try s.expectRefused("already_used", signature: good)
        // A bad signature with a used token still reports the signature first.
        try s.expectRefused(
            "signature_verification_error", signature: try UserRecovery.signChallenge(s.a.challenge, rootKey: s.keyB))
    }

    @Test func viewerMayNotComplete() throws {
        let s = try Scene()
        try s.expectRefused(
            "permission_denied", signature: s.goodSignature, session: try s.f.session(role: .viewer, name: "vic"))
    }

    @Test(arguments: [
        ("{\"version\":\"V1\",\"key\":\"\(String(repeating: "11", count: 31))\"}", "64 hex"),
        ("{\"version\":\"V1\",\"key\":\"\(String(repeating: "zz", count: 32))\"}", "hex"),
        ("", "empty"),
        ("   \n", "empty"),
        ("{\"version\":\"V2\",\"key\":\"ab\"}", "V1"),
        ("{\"version\":\"V0\",\"key\":\"\"}", "empty"),
        ("not json", "JSON object"),
    ])
    func malformedRootKeysSayWhichRuleBroke(_ input: String, _ mention: String) {
        let error = consoleError { _ = try UserRecovery.rootKey(json: Array(input.utf8)) }
        #expect(error?.code == "invalid_root_key")
        #expect(error?.message.contains(mention) == true)
        #expect(error?.message.contains("1111111111") == false)
    }

    @Test(arguments: [
        ("not base64!!", "base64"), (Base64.encode([UInt8](repeating: 1, count: 31)), "31"),
        (Base64.encode([UInt8](repeating: 1, count: 33)), "33"), ("", "got 0"),
        (Base64.encode([UInt8](repeating: 1, count: 32), alphabet: .url, padding: false), "base64"),
    ])
    func malformedChallenges(_ input: String, _ mention: String) {
        let error = consoleError { _ = try UserRecovery.challengeBytes(base64: input) }
        #expect(error?.code == "invalid_challenge")
        #expect(error?.message.contains(mention) == true)
    }
}

/// The same signature with `s` replaced by `n - s` (valid ECDSA, but high-S).
func highS(_ der: [UInt8]) throws -> [UInt8] {
    let n: [UInt8] = Hex.decode("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141") ?? []
    let rLength = Int(der[3])
    let r = Array(der[4..<4 + rLength])
    let sStart = 4 + rLength + 2
    var s = Array(der[sStart..<sStart + Int(der[sStart - 1])])
    while s.count > 32 { s.removeFirst() }
    s = [UInt8](repeating: 0, count: 32 - s.count) + s
    var out = [UInt8](repeating: 0, count: 32)
    var borrow = 0
    for i in stride(from: 31, through: 0, by: -1) {
        var d = Int(n[i]) - Int(s[i]) - borrow
        borrow = d < 0 ? 1 : 0
        if d < 0 { d += 256 }
        out[i] = UInt8(d)
    }
    var high = Array(out.drop { $0 == 0 })
    if let first = high.first, first & 0x80 != 0 { high.insert(0, at: 0) }
    let body = [0x02, UInt8(r.count)] + r + [0x02, UInt8(high.count)] + high
    return [0x30, UInt8(body.count)] + body
}
