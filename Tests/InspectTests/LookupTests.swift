import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Testing

@testable import Inspect

@Suite struct LookupTests {
    /// A backup with a passkey, a Google and an Apple account, a keychain keypair and a device.
    struct World {
        let t: TempStore
        let id: String
        let credential: [UInt8]
        let keychain: (uncompressed: [UInt8], compressed: [UInt8])
        let device: (uncompressed: [UInt8], compressed: [UInt8])
        var service: LookupService { LookupService(store: t.store) }

        init(_ backend: TestBackend = .sqlite) async throws {
            t = try await TempStore(backend)
            id = try t.backupId()
            // 32 bytes: base64 needs one padding character, so padded and unpadded forms differ;
            // 0xfb/0xff make '+', '/', '-' and '_' appear.
            credential = [0xfb, 0xff, 0xfe] + Array(repeating: 0xab, count: 29)
            keychain = try t.p256()
            device = try t.p256()
            let metadata = BackupMetadata(
                id: id, manifestHash: Hex.encode(t.rng.bytes(32)),
                factors: [
                    t.passkey(credential), t.google("104512345"), t.apple("001234.abcd.1234"),
                    t.keypair(keychain.uncompressed),
                ],
                syncFactors: [t.keypair(device.uncompressed)],
                keys: [.prf(encryptedKey: "aa"), t.turnkeyKey(), t.turnkeyKey(), .icloud(encryptedKey: "bb")])
            try await t.write(metadata)
        }

        func lookup(_ query: LookupQuery) async throws -> LookupResult {
            try await service.lookup(query, session: t.session)
        }
    }

    static let credentialForms: [(String, @Sendable ([UInt8]) -> String)] = [
        ("base64url unpadded", { Base64.encode($0, alphabet: .url, padding: false) }),
        ("base64url padded", { Base64.encode($0, alphabet: .url, padding: true) }),
        ("standard padded", { Base64.encode($0, alphabet: .standard, padding: true) }),
        ("standard unpadded", { Base64.encode($0, alphabet: .standard, padding: false) }),
        ("hex lowercase", { Hex.encode($0) }),
        ("hex uppercase", { Hex.encode($0).uppercased() }),
        ("with whitespace", { " " + Base64.encode($0, alphabet: .url, padding: false) + "\n" }),
    ]

    @Test(arguments: 0..<credentialForms.count)
    func passkeyNormalisation(_ form: Int) async throws {
        let w = try await World()
        let result = try await w.lookup(.passkey(credentialId: Self.credentialForms[form].1(w.credential)))
        #expect(result.backupId == w.id)
        #expect(result.scope == "MAIN")
        #expect(result.lookupKey == "MAIN#PK|" + Base64.encode(w.credential, alphabet: .url, padding: false))
        #expect(result.kind == "passkey")
        #expect(result.factorId != nil)
    }

    @Test(arguments: ["google", "GOOGLE", "https://accounts.google.com", "https://accounts.google.com/"])
    func googleProviders(_ provider: String) async throws {
        let w = try await World()
        let result = try await w.lookup(.oidc(provider: provider, sub: "104512345"))
        #expect(result.backupId == w.id)
        #expect(result.lookupKey == "MAIN#OIDC|https://accounts.google.com|104512345")
    }

    @Test(arguments: ["apple", "https://appleid.apple.com", "https://appleid.apple.com/"])
    func appleProviders(_ provider: String) async throws {
        let w = try await World()
        let result = try await w.lookup(.oidc(provider: provider, sub: "001234.abcd.1234"))
        #expect(result.lookupKey == "MAIN#OIDC|https://appleid.apple.com|001234.abcd.1234")
    }

    static let keyForms: [(String, @Sendable ([UInt8]) -> String)] = [
        ("standard padded", { Base64.encode($0) }),
        ("standard unpadded", { Base64.encode($0, padding: false) }),
        ("url unpadded", { Base64.encode($0, alphabet: .url, padding: false) }),
        ("url padded", { Base64.encode($0, alphabet: .url, padding: true) }),
        ("hex", { Hex.encode($0) }),
    ]

    @Test(arguments: 0..<keyForms.count, [false, true])
    func keypairNormalisation(_ form: Int, compressed: Bool) async throws {
        let w = try await World()
        let encode = Self.keyForms[form].1
        let main = try await w.lookup(
            .keypair(publicKey: encode(compressed ? w.keychain.compressed : w.keychain.uncompressed), sync: false))
        #expect(main.backupId == w.id)
        #expect(main.lookupKey == "MAIN#EC_KEYPAIR|" + Base64.encode(w.keychain.uncompressed))
        let sync = try await w.lookup(
            .keypair(publicKey: encode(compressed ? w.device.compressed : w.device.uncompressed), sync: true))
        #expect(sync.scope == "SYNC")
        #expect(sync.lookupKey == "SYNC#EC_KEYPAIR|" + Base64.encode(w.device.uncompressed))
    }

    @Test(arguments: TestBackend.available) func scopeMatters(backend: TestBackend) async throws {
        let w = try await World(backend)
        let error = await consoleError {
            _ = try await w.lookup(.keypair(publicKey: Base64.encode(w.device.uncompressed), sync: false))
        }
        #expect(error?.code == "not_found")
    }

    @Test(arguments: TestBackend.available) func accountLookup(backend: TestBackend) async throws {
        let w = try await World(backend)
        let result = try await w.lookup(.account(w.id))
        #expect(result == LookupResult(backupId: w.id, scope: "ACCOUNT", lookupKey: w.id, kind: "account"))
        // An id pasted upper-cased names the same backup (the service writes ids lowercase).
        #expect(try await w.lookup(.account(w.id.uppercased())) == result)
        let missing = try w.t.backupId()
        #expect(await consoleError { _ = try await w.lookup(.account(missing)) }?.code == "not_found")
    }

    @Test(arguments: TestBackend.available) func unauthorizedFactorIsNotAHit(backend: TestBackend) async throws {
        let w = try await World(backend)
        let stale = "MAIN#PK|" + Base64.encode([1, 2, 3, 4, 5, 6], alphabet: .url, padding: false)
        try await w.t.writeRows([LookupRow(pk: stale, backupId: w.id)])
        let error = await consoleError { _ = try await w.lookup(.passkey(credentialId: "AQIDBAUG")) }
        #expect(error?.code == "unauthorized_factor")
        #expect(error?.kind == .notFound)
        let audited = try await w.t.audit("backup.lookup")
        #expect(audited.last?.details["outcome"] == "unauthorized_factor")
    }

    @Test(arguments: TestBackend.available) func danglingRow(backend: TestBackend) async throws {
        let w = try await World(backend)
        let ghost = try w.t.backupId()
        try await w.t.writeRows([LookupRow(pk: "MAIN#OIDC|https://accounts.google.com|999", backupId: ghost)])
        let error = await consoleError { _ = try await w.lookup(.oidc(provider: "google", sub: "999")) }
        #expect(error?.code == "dangling_lookup")
        #expect(error?.message.contains(ghost) == true)
    }

    /// An operator token pasted as a credential id is not repeated by the miss.
    @Test func aTokenShapedQueryIsNotRepeated() async throws {
        let w = try await World()
        let token = "bctl_" + String(repeating: "Q", count: 43)
        let error = await consoleError { _ = try await w.lookup(.passkey(credentialId: token)) }
        #expect(error?.code == "not_found")
        #expect(error?.message.contains(String(repeating: "Q", count: 20)) == false, "\(error?.message ?? "")")
    }

    @Test(arguments: TestBackend.available) func misses(backend: TestBackend) async throws {
        let w = try await World(backend)
        #expect(
            await consoleError { _ = try await w.lookup(.passkey(credentialId: "AAAAAAAAAAAAAAAAAAAAAA")) }?.code
                == "not_found")
        #expect(
            await consoleError { _ = try await w.lookup(.oidc(provider: "apple", sub: "nobody")) }?.code == "not_found")
        let other = try w.t.p256()
        #expect(
            await consoleError {
                _ = try await w.lookup(.keypair(publicKey: Hex.encode(other.compressed), sync: true))
            }?.code
                == "not_found")
    }

    @Test(arguments: [
        (LookupQuery.passkey(credentialId: "not base64!"), "invalid_credential_id", "CREDENTIAL_ID"),
        (.passkey(credentialId: ""), "invalid_credential_id", "CREDENTIAL_ID"),
        (.oidc(provider: "facebook", sub: "1"), "invalid_provider", "provider"),
        (.oidc(provider: "google", sub: ""), "invalid_sub", "SUB"),
        (.oidc(provider: "google", sub: "a|b"), "invalid_sub", "SUB"),
        (.keypair(publicKey: "AAAA", sync: false), "invalid_public_key", "PUBLIC_KEY"),
        (
            .keypair(publicKey: "05" + String(repeating: "11", count: 64), sync: false), "invalid_public_key",
            "PUBLIC_KEY"
        ),
        (.account("backup_account_zz"), "invalid_backup_account_id", "Backup Account ID"),
        (.account("account_02"), "invalid_backup_account_id", "Backup Account ID"),
    ])
    func badInput(_ query: LookupQuery, code: String, field: String) async throws {
        let w = try await World()
        let error = await consoleError { _ = try await w.lookup(query) }
        #expect(error?.code == code)
        #expect(error?.kind == .invalidInput)
        #expect(error?.message.contains(field) == true)
        #expect(error?.message.contains("\n") == false)
    }

    @Test(arguments: TestBackend.available) func offCurvePointsAreBadInput(backend: TestBackend) async throws {
        let w = try await World(backend)
        // An uncompressed point with one bit of y flipped is off the curve.
        var bad = w.device.uncompressed
        bad[64] ^= 1
        let error = await consoleError { _ = try await w.lookup(.keypair(publicKey: Base64.encode(bad), sync: true)) }
        #expect(error?.code == "invalid_public_key")
        // x = 2^256 - 1 is above the field prime: the right shape, but not a secp256k1 point.
        let idError = await consoleError {
            _ = try await w.lookup(.account("backup_account_02" + String(repeating: "ff", count: 32)))
        }
        #expect(idError?.code == "invalid_backup_account_id")
    }

    @Test(arguments: TestBackend.available) func hitsAreAudited(backend: TestBackend) async throws {
        let w = try await World(backend)
        _ = try await w.lookup(.oidc(provider: "google", sub: "104512345"))
        _ = try await w.lookup(.account(w.id))
        let entries = try await w.t.audit("backup.lookup")
        #expect(entries.count == 2)
        #expect(entries.allSatisfy { $0.target == w.id && $0.operatorName == "root" })
        #expect(entries.map { $0.details["kind"] } == ["oidc", "account"])
        _ = await consoleError { _ = try await w.lookup(.passkey(credentialId: "AAAAAAAAAAAAAAAAAAAAAA")) }
        await #expect(try w.t.audit("backup.lookup").count == 2)
    }

    /// A run of lookups made together (a script's read-ahead, ``LookupPrefetch``) answers each
    /// as it is answered alone — hits in every form, refusals, misses, bad input — from one read
    /// of the index made at the first of them; a key not among the run's is read when asked.
    @Test(arguments: TestBackend.available) func aRunOfLookupsAnswersFromOneRead(backend: TestBackend) async throws {
        let w = try await World(backend)
        let ghost = try w.t.backupId()
        try await w.t.writeRows([
            LookupRow(
                pk: "MAIN#PK|" + Base64.encode([1, 2, 3, 4, 5, 6], alphabet: .url, padding: false), backupId: w.id),
            LookupRow(pk: "MAIN#OIDC|https://accounts.google.com|999", backupId: ghost),
        ])
        let queries: [LookupQuery] = [
            .passkey(credentialId: Hex.encode(w.credential)),
            .passkey(credentialId: Base64.encode(w.credential, alphabet: .standard, padding: true)),
            .oidc(provider: "google", sub: "104512345"),
            .keypair(publicKey: Base64.encode(w.keychain.compressed), sync: false),
            .keypair(publicKey: Hex.encode(w.device.uncompressed), sync: true),
            .keypair(publicKey: Hex.encode(w.device.uncompressed), sync: false),
            .passkey(credentialId: "AQIDBAUG"),
            .oidc(provider: "google", sub: "999"),
            .passkey(credentialId: "AAAAAAAAAAAAAAAAAAAAAA"),
            .passkey(credentialId: "not base64!"),
            .account(w.id),
        ]
        func answer(_ query: LookupQuery) async -> String {
            do {
                let result = try await w.lookup(query)
                return "\(result.backupId) \(result.scope) \(result.lookupKey) \(result.factorId ?? "-")"
            } catch let error as ConsoleError {
                return "\(error.code): \(error.message)"
            } catch {
                return "\(error)"
            }
        }
        var alone: [String] = []
        for query in queries { alone.append(await answer(query)) }
        // Hits and refusals naming a backup are audited; misses and bad input are not.
        #expect(try await w.t.audit("backup.lookup").count == 8)
        let together = await LookupPrefetch.$current.withValue(LookupPrefetch(queries)) {
            var answers: [String] = []
            for query in queries { answers.append(await answer(query)) }
            return answers
        }
        #expect(together == alone)
        #expect(
            Set(alone.map { $0.prefix(while: { $0 != ":" }) }).isSuperset(of: [
                "unauthorized_factor", "dangling_lookup", "not_found", "invalid_credential_id",
            ]))
        #expect(try await w.t.audit("backup.lookup").count == 2 * 8)

        // One read: the ghost's row, pointed at the backup after the run's first lookup, is
        // still the ghost's for the run; a key outside the run sees the store as it is now.
        try await LookupPrefetch.$current.withValue(LookupPrefetch(queries)) {
            _ = try await w.lookup(queries[0])
            try await w.t.writeRows([
                LookupRow(pk: "MAIN#OIDC|https://accounts.google.com|999", backupId: w.id),
                LookupRow(pk: "MAIN#OIDC|https://accounts.google.com|555", backupId: ghost),
            ])
            #expect(await answer(queries[7]).hasPrefix("dangling_lookup"))
            #expect(await answer(.oidc(provider: "google", sub: "555")).hasPrefix("dangling_lookup"))
        }
        #expect(await answer(queries[7]).hasPrefix("unauthorized_factor"))
    }

    @Test(arguments: TestBackend.available) func otherTenantsBackupsAreInvisible(backend: TestBackend) async throws {
        let w = try await World(backend)
        let other = try await w.t.otherSession()
        let error = await consoleError { _ = try await w.service.lookup(.account(w.id), session: other) }
        #expect(error?.code == "not_found")
        let byFactor = await consoleError {
            _ = try await w.service.lookup(.oidc(provider: "google", sub: "104512345"), session: other)
        }
        #expect(byFactor?.code == "not_found")
        let show = await consoleError {
            _ = try await BackupInspector(store: w.t.store).show(backupId: w.id, session: other)
        }
        #expect(show?.code == "not_found")
    }
}
