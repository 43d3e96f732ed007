import BackupModel
import Testing

@testable import BackupCrypto

@Suite("Backup Account Key and ID (facts §3, §5)")
struct BackupAccountKeyTests {
    @Test("material matches the vector", arguments: VectorFile.shared.backupAccountIds)
    func material(vector: VectorFile.AccountVector) throws {
        let key = try rootKey(vector.rootKeyJson)
        #expect(hex(BackupAccountKey.material(of: key)) == vector.materialHex)
    }

    @Test("subkey matches the vector", arguments: VectorFile.shared.backupAccountIds)
    func subkey(vector: VectorFile.AccountVector) throws {
        let key = try rootKey(vector.rootKeyJson)
        let subkey = try BackupAccountKey.subkey(material: BackupAccountKey.material(of: key))
        #expect(hex(subkey) == vector.subkeyHex)
        #expect(hex(try BackupAccountKey.secretKey(rootKey: key)) == vector.subkeyHex)
    }

    @Test("ID matches the vector and validates", arguments: VectorFile.shared.backupAccountIds)
    func backupAccountID(vector: VectorFile.AccountVector) throws {
        let id = try BackupAccountKey.derive(rootKey: try rootKey(vector.rootKeyJson))
        #expect(id.rawValue == vector.backupAccountId)
        #expect(try BackupAccountID(vector.backupAccountId) == id)
        try BackupAccountKey.validate(id)
    }

    @Test("the /reset signature is byte-identical to the vector and verifies")
    func resetSignature() throws {
        let vector = VectorFile.shared.resetSignature
        let key = try rootKey(vector.rootKeyJson)
        let challenge = try #require(Base64.decode(vector.challengeBase64, alphabet: .standard))
        #expect(challenge.count == 32)
        let signature = try BackupAccountKey.signChallenge(challenge, rootKey: key)
        #expect(Base64.encode(signature) == vector.signatureBase64)

        let id = try BackupAccountID(vector.backupAccountId)
        #expect(try BackupAccountKey.derive(rootKey: key) == id)
        let digest = SHA256.hash(challenge)
        #expect(Secp256k1.verify(derSignature: signature, digest: digest, publicKey: id.publicKey) == .valid)
        // Deterministic: signing again gives the same bytes.
        #expect(try BackupAccountKey.signChallenge(challenge, rootKey: key) == signature)
    }

    @Test("the high-S twin of the reset signature is rejected, not normalized")
    func resetSignatureHighS() throws {
        let vector = VectorFile.shared.resetSignature
        let signature = try #require(Base64.decode(vector.signatureBase64, alphabet: .standard))
        let challenge = try #require(Base64.decode(vector.challengeBase64, alphabet: .standard))
        let id = try BackupAccountID(vector.backupAccountId)
        let highS = DERSignature.flippingS(signature)
        #expect(highS != signature)
        #expect(
            Secp256k1.verify(derSignature: highS, digest: SHA256.hash(challenge), publicKey: id.publicKey) == .mismatch)
    }

    @Test("an ID whose bytes are not on the curve fails validation")
    func validateRejectsOffCurve() throws {
        // x = 5 gives y² = 132, which is not a square mod p (no point has x = 5).
        let off = try BackupAccountID("backup_account_02" + String(repeating: "0", count: 62) + "05")
        #expect(throws: ConsoleError.self) { try BackupAccountKey.validate(off) }
        do {
            try BackupAccountKey.validate(off)
        } catch {
            #expect(error.code == "invalid_backup_account_id")
        }
        // x = p is out of range.
        let outOfRange = try BackupAccountID(
            "backup_account_02FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F")
        #expect(throws: ConsoleError.self) { try BackupAccountKey.validate(outOfRange) }
    }

    @Test("derive → validate and sign → verify over random root keys")
    func randomRootKeys() throws {
        let random = SystemRandom()
        for _ in 0..<200 {
            let key = RootKey(version: .v1, secret: random.secretBytes(32))
            let id = try BackupAccountKey.derive(rootKey: key)
            try BackupAccountKey.validate(id)
            let challenge = random.bytes(32)
            let signature = try BackupAccountKey.signChallenge(challenge, rootKey: key)
            #expect(
                Secp256k1.verify(derSignature: signature, digest: SHA256.hash(challenge), publicKey: id.publicKey)
                    == .valid)
        }
    }

    @Test("V0 material is SHA-256 of the string, not its hex decoding")
    func v0Material() throws {
        let key = try rootKey(#"{"version":"V0","key":"abc"}"#)
        #expect(hex(BackupAccountKey.material(of: key)) == SHA256.hex(Array("abc".utf8)))
    }

    @Test("material of the wrong size is an error")
    func wrongMaterialSize() {
        #expect(throws: ConsoleError.self) {
            try BackupAccountKey.subkey(material: SecretBytes([UInt8](repeating: 1, count: 31)))
        }
        let short = RootKey(version: .v1, secret: SecretBytes([UInt8](repeating: 1, count: 16)))
        #expect(throws: ConsoleError.self) { try BackupAccountKey.derive(rootKey: short) }
    }

    @Test("the root key never shows in its description")
    func rootKeyRedacted() throws {
        let key = try rootKey(VectorFile.shared.backupAccountIds[0].rootKeyJson)
        #expect(!"\(key)".contains("1111"))
        #expect(!"\(BackupAccountKey.material(of: key))".contains("1111"))
    }
}
