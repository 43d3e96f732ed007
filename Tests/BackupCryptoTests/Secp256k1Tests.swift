import BackupModel
import Testing

@testable import BackupCrypto

@Suite("secp256k1")
struct Secp256k1Tests {
    static let orderHex = "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141"

    @Test(
        "scalars that are not secret keys throw instead of crashing",
        arguments: [
            String(repeating: "00", count: 32),
            orderHex,
            "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364142",
            String(repeating: "FF", count: 32),
            "01",
        ])
    func invalidScalars(hexKey: String) throws {
        let key = SecretBytes(try #require(Hex.decode(hexKey)))
        #expect(!Secp256k1.isValidSecretKey(key))
        #expect(throws: ConsoleError.self) { try Secp256k1.publicKey(secretKey: key) }
        #expect(throws: ConsoleError.self) { try Secp256k1.sign(digest: SHA256.hash([1, 2, 3]), secretKey: key) }
        do {
            _ = try Secp256k1.publicKey(secretKey: key)
        } catch {
            #expect(error.code == "invalid_secret_key")
            #expect(error.kind == .invalidInput)
        }
    }

    @Test("n - 1 and 1 are valid secret keys with known public keys")
    func edgeScalars() throws {
        let one = SecretBytes([UInt8](repeating: 0, count: 31) + [1])
        #expect(
            Hex.encode(try Secp256k1.publicKey(secretKey: one))
                == "0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798")
        let nMinus1 = SecretBytes(
            DERSignature.subtract(DERSignature.secp256k1Order, [UInt8](repeating: 0, count: 31) + [1]))
        #expect(Secp256k1.isValidSecretKey(nMinus1))
        // -G has the same x as G and the opposite parity.
        #expect(
            Hex.encode(try Secp256k1.publicKey(secretKey: nMinus1))
                == "0379be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798")
    }

    @Test("random keys: public keys in both forms, sign/verify round trip, low-S, high-S rejected")
    func randomRoundTrips() throws {
        let random = SystemRandom()
        let other = Secp256k1.generateSecretKey()
        let otherPublic = try Secp256k1.publicKey(secretKey: other)
        for _ in 0..<200 {
            let key = Secp256k1.generateSecretKey(using: random)
            let compressed = try Secp256k1.publicKey(secretKey: key)
            let uncompressed = try Secp256k1.publicKey(secretKey: key, compressed: false)
            #expect(compressed.count == 33)
            #expect(uncompressed.count == 65 && uncompressed[0] == 0x04)
            #expect(Array(compressed[1...]) == Array(uncompressed[1..<33]))
            #expect(compressed[0] == (uncompressed[64] & 1 == 0 ? 0x02 : 0x03))
            #expect(Secp256k1.isValidPublicKey(compressed) && Secp256k1.isValidPublicKey(uncompressed))

            let digest = random.bytes(32)
            let signature = try Secp256k1.sign(digest: digest, secretKey: key)
            #expect(Secp256k1.verify(derSignature: signature, digest: digest, publicKey: compressed) == .valid)
            #expect(Secp256k1.verify(derSignature: signature, digest: digest, publicKey: uncompressed) == .valid)
            #expect(Secp256k1.verify(derSignature: signature, digest: digest, publicKey: otherPublic) == .mismatch)
            var tampered = digest
            tampered[0] ^= 1
            #expect(Secp256k1.verify(derSignature: signature, digest: tampered, publicKey: compressed) == .mismatch)

            let s = DERSignature.parse(signature).s
            #expect(s[0] < 0x80, "libsecp256k1 signs low-S")
            let highS = DERSignature.flippingS(signature)
            #expect(Secp256k1.verify(derSignature: highS, digest: digest, publicKey: compressed) == .mismatch)
        }
    }

    @Test("a signature by another key is a mismatch")
    func otherKey() throws {
        let key = Secp256k1.generateSecretKey()
        let other = Secp256k1.generateSecretKey()
        let digest = SHA256.hash(Array("hello".utf8))
        let signature = try Secp256k1.sign(digest: digest, secretKey: other)
        let check = Secp256k1.verify(
            derSignature: signature, digest: digest, publicKey: try Secp256k1.publicKey(secretKey: key))
        #expect(check == .mismatch)
    }

    @Test(
        "DER garbage is a malformed signature",
        arguments: [
            [UInt8](),
            [0x00],
            [0x30, 0x00],
            Array("not a signature".utf8),
            [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01],
            [UInt8](repeating: 0xff, count: 70),
        ])
    func garbage(der: [UInt8]) throws {
        let key = Secp256k1.generateSecretKey()
        let check = Secp256k1.verify(
            derSignature: der, digest: SHA256.hash([1]), publicKey: try Secp256k1.publicKey(secretKey: key))
        #expect(check == .malformedSignature)
    }

    @Test("trailing bytes after the DER make it malformed")
    func trailingBytes() throws {
        let key = Secp256k1.generateSecretKey()
        let digest = SHA256.hash([1])
        let signature = try Secp256k1.sign(digest: digest, secretKey: key)
        let check = Secp256k1.verify(
            derSignature: signature + [0], digest: digest, publicKey: try Secp256k1.publicKey(secretKey: key))
        #expect(check == .malformedSignature)
    }

    @Test("a bad public key is reported as such")
    func badPublicKey() throws {
        let key = Secp256k1.generateSecretKey()
        let digest = SHA256.hash([1])
        let signature = try Secp256k1.sign(digest: digest, secretKey: key)
        let good = try Secp256k1.publicKey(secretKey: key, compressed: false)
        var hybrid = good
        hybrid[0] = good[64] & 1 == 0 ? 0x06 : 0x07
        let offCurve = [0x02] + [UInt8](repeating: 0, count: 31) + [5]
        for bad in [[], [0x02], Array(good.prefix(64)), hybrid, offCurve] {
            #expect(!Secp256k1.isValidPublicKey(bad))
            #expect(Secp256k1.verify(derSignature: signature, digest: digest, publicKey: bad) == .malformedPublicKey)
        }
    }

    @Test("a digest that is not 32 bytes cannot be signed")
    func digestLength() {
        let key = Secp256k1.generateSecretKey()
        #expect(throws: ConsoleError.self) { try Secp256k1.sign(digest: [1, 2, 3], secretKey: key) }
    }

    @Test("generating keys from a seeded source is reproducible")
    func seededGeneration() throws {
        let a = Secp256k1.generateSecretKey(using: SeededRandom(seed: 7))
        let b = Secp256k1.generateSecretKey(using: SeededRandom(seed: 7))
        #expect(a == b)
        #expect(Secp256k1.isValidSecretKey(a))
    }

    @Test("signing is safe from many tasks at once (shared context)")
    func concurrentSigning() async throws {
        let key = Secp256k1.generateSecretKey()
        let publicKey = try Secp256k1.publicKey(secretKey: key)
        let results = try await withThrowingTaskGroup(of: SignatureCheck.self) { group in
            for i in 0..<64 {
                group.addTask {
                    let digest = SHA256.hash([UInt8(i)])
                    let signature = try Secp256k1.sign(digest: digest, secretKey: key)
                    return Secp256k1.verify(derSignature: signature, digest: digest, publicKey: publicKey)
                }
            }
            var all: [SignatureCheck] = []
            for try await result in group { all.append(result) }
            return all
        }
        #expect(results.count == 64 && results.allSatisfy { $0 == .valid })
    }
}
