import Access
import BackupCrypto
import BackupModel
import BackupService
import ConsoleStore
import Foundation
import Recovery
import Testing

/// Each bad input: the Backup Service's code relayed, the refusal audited as one, and nothing
/// else changed — in the service (the sandbox runs over the same store) or in the console.
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

        init() async throws {
            f = try await Fixture()
            service = try await f.service()
            idA = try await f.addBackup(keyA)
            idB = try await f.addBackup(keyB, subOrgs: ["suborg-c"])
            a = try await service.begin(backupAccountId: idA.rawValue, session: f.session)
            b = try await service.begin(backupAccountId: idB.rawValue, session: f.session)
        }

        func snapshot() async throws -> Fixture.Snapshot {
            try await f.snapshot(ids: [idA, idB], tokenHashes: [a.tokenHash, b.tokenHash])
        }

        /// Runs `complete` and checks the code, the audited refusal, and that nothing else changed.
        func expectRefused(
            _ code: String, token: SecretBytes? = nil, signature: String, backupAccountId: String? = nil,
            session: Session? = nil, audited: Bool = true, sourceLocation: SourceLocation = #_sourceLocation
        ) async throws {
            let before = try await snapshot()
            let refusalsBefore = try await refusals()
            let error = await consoleError {
                _ = try await service.complete(
                    token: token ?? a.token, signature: signature, backupAccountId: backupAccountId,
                    session: session ?? f.session)
            }
            #expect(error?.code == code, sourceLocation: sourceLocation)
            #expect(
                error.map { $0.kind != .internalError && $0.kind != .remote } == true, sourceLocation: sourceLocation)
            await #expect(try snapshot() == before, sourceLocation: sourceLocation)
            let added = try await refusals().dropFirst(refusalsBefore.count)
            if audited {
                #expect(added.map { $0.details["code"] } == [code], sourceLocation: sourceLocation)
            } else {
                #expect(added.isEmpty, sourceLocation: sourceLocation)
            }
        }

        func refusals() async throws -> [AuditEntry] {
            try await f.store.auditEntries(tenant: nil, afterSeq: 0, limit: 100_000).filter {
                $0.action == "reset.refused"
            }
        }

        var goodSignature: String { (try? UserRecovery.signChallenge(a.challenge, rootKey: keyA)) ?? "" }
    }

    @Test func notBase64AndDERGarbageAreInvalidSignature() async throws {
        let s = try await Scene()
        try await s.expectRefused("invalid_signature", signature: "not base64!")
        try await s.expectRefused("invalid_signature", signature: String(s.goodSignature.dropLast(2)) + "!")
        try await s.expectRefused("invalid_signature", signature: Base64.encode([0x30, 0x03, 0x02, 0x01, 0x01]))
        try await s.expectRefused("invalid_signature", signature: Base64.encode(Array(repeating: 0x41, count: 70)))
        // The service decodes with Rust's STANDARD engine, which requires the padding (a low-S
        // DER signature is 70 or 71 bytes, so it always has some).
        let good = s.goodSignature
        try #require(good.hasSuffix("="))
        try await s.expectRefused("invalid_signature", signature: String(good.prefix { $0 != "=" }))
        // k256's from_der refuses an r or s of 0 or ≥ n; libsecp256k1 alone would parse them.
        try await s.expectRefused(
            "invalid_signature", signature: Base64.encode([0x30, 0x06, 0x02, 0x01, 0x00, 0x02, 0x01, 0x01]))
        let overN: [UInt8] = [0x02, 0x21, 0x00] + Array(repeating: 0xFF, count: 32)
        try await s.expectRefused(
            "invalid_signature", signature: Base64.encode([0x30, 0x26, 0x02, 0x01, 0x01] + overN))
        // Empty is refused before anything is sent.
        try await s.expectRefused("invalid_signature", signature: "", audited: false)
        await s.f.stop()
    }

    @Test func wrongKeyWrongChallengeAndHighSFailVerification() async throws {
        let s = try await Scene()
        try await s.expectRefused(
            "signature_verification_error", signature: try UserRecovery.signChallenge(s.a.challenge, rootKey: s.keyB))
        try await s.expectRefused(
            "signature_verification_error", signature: try UserRecovery.signChallenge(s.b.challenge, rootKey: s.keyA))
        try await s.expectRefused(
            "signature_verification_error", signature: try UserRecovery.signChallenge(s.b.challenge, rootKey: s.keyB))
        // The high-S twin of a valid signature: the service rejects it.
        let der = try #require(Base64.decode(s.goodSignature, alphabet: .standard))
        try await s.expectRefused("signature_verification_error", signature: Base64.encode(try highS(der)))
        await s.f.stop()
    }

    @Test func tokenProblems() async throws {
        let s = try await Scene()
        let good = s.goodSignature
        // Not one printable word: refused before anything is sent.
        try await s.expectRefused(
            "invalid_reset_token", token: SecretBytes(Array("two words".utf8)), signature: good, audited: false)
        try await s.expectRefused("invalid_reset_token", token: SecretBytes([]), signature: good, audited: false)
        // A token this console never issued needs the backup named …
        try await s.expectRefused(
            "unknown_reset_token", token: SecretBytes(Array("sbx.forged.token".utf8)), signature: good,
            audited: false)
        // … and then the service refuses a forged or tampered one (jwt_error).
        try await s.expectRefused(
            "jwt_error", token: SecretBytes(Array("sbx.forged.token".utf8)), signature: good,
            backupAccountId: s.idA.rawValue)
        var tampered = Array(s.a.tokenText.utf8)
        tampered[6] = tampered[6] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        try await s.expectRefused(
            "jwt_error", token: SecretBytes(tampered), signature: good, backupAccountId: s.idA.rawValue)
        // Another backup named for A's token: refused here, as the service would.
        try await s.expectRefused(
            "invalid_challenge_context", signature: good, backupAccountId: s.idB.rawValue, audited: false)
        try await s.expectRefused(
            "invalid_backup_account_id", signature: good, backupAccountId: "backup_account_12", audited: false)
        await s.f.stop()
    }

    /// The service's own checks, reached with the client directly (as a console that did not
    /// issue the token would): context, then the id's curve point.
    @Test func serviceRelaysContextAndIdErrors() async throws {
        let s = try await Scene()
        let client = try #require(s.f.lastClient)
        let context = await consoleError {
            do throws(BackupServiceError) {
                try await client.reset(backupAccountId: s.idB.rawValue, signature: s.goodSignature, token: s.a.token)
            } catch {
                throw error.consoleError
            }
        }
        #expect(context?.code == "invalid_challenge_context")
        // An off-curve id: the challenge route does not check points, /v1/reset does.
        let offCurve = "backup_account_02" + String(repeating: "ff", count: 32)
        let issued = try await client.resetChallenge(backupAccountId: offCurve)
        let error = await consoleError {
            do throws(BackupServiceError) {
                try await client.reset(backupAccountId: offCurve, signature: s.goodSignature, token: issued.token)
            } catch {
                throw error.consoleError
            }
        }
        #expect(error?.code == "invalid_backup_account_id" && error?.kind == .invalidInput)
        await #expect(try s.snapshot().backups.count == 2)
        await s.f.stop()
    }

    @Test func tokenFromAnotherTenantIsAContextMismatch() async throws {
        let s = try await Scene()
        let other = try await s.f.otherTenant()
        let idC = try await s.f.addBackup(rootKey("45"), tenant: other.tenantName)
        let otherService = try await s.f.service(tenant: other.tenantName)
        let c = try await otherService.begin(backupAccountId: idC.rawValue, session: other)
        let signature = try UserRecovery.signChallenge(c.challenge, rootKey: rootKey("45"))
        try await s.expectRefused("invalid_challenge_context", token: c.token, signature: signature, audited: false)
        try await s.expectRefused(
            "invalid_challenge_context", signature: s.goodSignature, session: other, audited: false)
        let otherBefore = try await s.f.snapshot(ids: [idC], tokenHashes: [c.tokenHash], tenant: other.tenantName)
        #expect(otherBefore.backups == [idC.rawValue])
        await s.f.stop()
    }

    @Test func expiredTokenIsTheServicesJwtError() async throws {
        let s = try await Scene()
        s.f.time.advance(byMillis: 901_000)
        try await s.expectRefused("jwt_error", signature: s.goodSignature)
        await s.f.stop()
    }

    @Test func reusedToken() async throws {
        let s = try await Scene()
        let good = s.goodSignature
        _ = try await s.service.complete(token: s.a.token, signature: good, session: s.f.session)
        // As the service: with the backup gone the replay is not_found (existence is checked before use) …
        try await s.expectRefused("not_found", signature: good)
        // … and once the user re-creates the backup (same Root Key, same ID) it is already_used.
        try await s.f.addBackup(s.keyA)
        try await s.expectRefused("already_used", signature: good)
        // A bad signature with a used token still reports the signature first.
        try await s.expectRefused(
            "signature_verification_error", signature: try UserRecovery.signChallenge(s.a.challenge, rootKey: s.keyB))
        await s.f.stop()
    }

    @Test func viewerMayNotComplete() async throws {
        let s = try await Scene()
        try await s.expectRefused(
            "permission_denied", signature: s.goodSignature, session: try s.f.session(role: .viewer, name: "vic"),
            audited: false)
        await s.f.stop()
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
