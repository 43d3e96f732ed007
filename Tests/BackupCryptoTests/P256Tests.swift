import BackupModel
import Testing

@testable import BackupCrypto

@Suite("P-256")
struct P256Tests {
    static let orderHex = "FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551"

    @Test("the generator's public key (private key 1) is the known point")
    func knownAnswer() throws {
        let one = SecretBytes([UInt8](repeating: 0, count: 31) + [1])
        let uncompressed = try P256.publicKey(privateKey: one, compressed: false)
        #expect(
            Hex.encode(uncompressed)
                == "04" + "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
                + "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")
        #expect(
            Hex.encode(try P256.publicKey(privateKey: one, compressed: true))
                == "036b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296")
    }

    @Test(
        "scalars outside [1, n-1] are rejected",
        arguments: [String(repeating: "00", count: 32), orderHex, String(repeating: "FF", count: 32), "01"])
    func invalidScalars(hexKey: String) throws {
        let key = SecretBytes(try #require(Hex.decode(hexKey)))
        #expect(!P256.isValidPrivateKey(key))
        #expect(throws: ConsoleError.self) { try P256.publicKey(privateKey: key, compressed: true) }
        #expect(throws: ConsoleError.self) { try P256.sign(message: [1], privateKey: key) }
    }

    @Test("random keys: public keys, compress/decompress, sign/verify round trips")
    func randomRoundTrips() throws {
        let random = SystemRandom()
        let otherPublic = try P256.publicKey(privateKey: P256.generatePrivateKey(), compressed: true)
        for i in 0..<200 {
            let key = P256.generatePrivateKey(using: random)
            #expect(P256.isValidPrivateKey(key))
            let compressed = try P256.publicKey(privateKey: key, compressed: true)
            let uncompressed = try P256.publicKey(privateKey: key, compressed: false)
            #expect(compressed.count == 33 && uncompressed.count == 65 && uncompressed[0] == 0x04)
            #expect(P256.isValidPublicKey(compressed) && P256.isValidPublicKey(uncompressed))
            #expect(try P256.compress(uncompressed) == compressed)
            #expect(try P256.compress(compressed) == compressed)
            #expect(try P256.decompress(compressed) == uncompressed)
            #expect(try P256.decompress(uncompressed) == uncompressed)

            let message = random.bytes(i % 97)
            let signature = try P256.sign(message: message, privateKey: key)
            #expect(P256.verify(derSignature: signature, message: message, publicKey: compressed) == .valid)
            #expect(P256.verify(derSignature: signature, message: message, publicKey: uncompressed) == .valid)
            #expect(P256.verify(derSignature: signature, message: message + [0], publicKey: compressed) == .mismatch)
            #expect(P256.verify(derSignature: signature, message: message, publicKey: otherPublic) == .mismatch)
        }
    }

    @Test("bad public keys are rejected everywhere")
    func badPublicKeys() throws {
        let key = P256.generatePrivateKey()
        let good = try P256.publicKey(privateKey: key, compressed: false)
        var hybrid = good
        hybrid[0] = good[64] & 1 == 0 ? 0x06 : 0x07
        var offCurve = good
        offCurve[64] ^= 1
        let noSuchX = [0x02] + [UInt8](repeating: 0, count: 31) + [1]  // x = 1 is not on P-256
        let signature = try P256.sign(message: [1], privateKey: key)
        for bad in [[], [0x00], [0x04], Array(good.prefix(64)), hybrid, offCurve, noSuchX] {
            #expect(!P256.isValidPublicKey(bad))
            #expect(throws: ConsoleError.self) { try P256.compress(bad) }
            #expect(throws: ConsoleError.self) { try P256.decompress(bad) }
            #expect(P256.verify(derSignature: signature, message: [1], publicKey: bad) == .malformedPublicKey)
        }
    }

    @Test("DER garbage and non-canonical DER are malformed")
    func garbage() throws {
        let key = P256.generatePrivateKey()
        let publicKey = try P256.publicKey(privateKey: key, compressed: true)
        let signature = try P256.sign(message: [1], privateKey: key)
        // A redundant leading zero on r is BER-valid but not DER.
        let (r, s) = DERSignature.parse(signature)
        let rBody = Array(r.drop(while: { $0 == 0 }))
        let rPadded: [UInt8] = [0x00, 0x00] + rBody
        let sEncoded = Array(DERSignature.encode(r: [1], s: s).dropFirst(5))
        let body = [0x02, UInt8(rPadded.count)] + rPadded + sEncoded
        let nonCanonical = [0x30, UInt8(body.count)] + body
        for bad in [[], [0x30, 0x00], Array("garbage".utf8), signature + [0], nonCanonical] {
            #expect(P256.verify(derSignature: bad, message: [1], publicKey: publicKey) == .malformedSignature)
        }
    }

    @Test("an empty message can be signed and verified")
    func emptyMessage() throws {
        let key = P256.generatePrivateKey()
        let signature = try P256.sign(message: [], privateKey: key)
        let publicKey = try P256.publicKey(privateKey: key, compressed: false)
        #expect(P256.verify(derSignature: signature, message: [], publicKey: publicKey) == .valid)
    }

    @Test("an OpenSSL high-S signature still verifies (P-256 has no low-S rule)")
    func highSAccepted() throws {
        let key = P256.generatePrivateKey()
        let publicKey = try P256.publicKey(privateKey: key, compressed: true)
        let signature = try P256.sign(message: [9], privateKey: key)
        let order = try #require(Hex.decode(Self.orderHex))
        let flipped = DERSignature.flippingS(signature, order: order)
        #expect(P256.verify(derSignature: flipped, message: [9], publicKey: publicKey) == .valid)
    }
}
