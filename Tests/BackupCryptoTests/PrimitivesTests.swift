import BackupModel
import Foundation
import Testing

@testable import BackupCrypto

@Suite("SHA-256, randomness, secrets")
struct PrimitivesTests {
    @Test(
        "SHA-256 known answers",
        arguments: [
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            (
                "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
            ),
        ])
    func sha256(input: String, expected: String) {
        #expect(SHA256.hex(Array(input.utf8)) == expected)
        #expect(Hex.encode(SHA256.hash(Data(input.utf8))) == expected)
        #expect(Hex.encode(SHA256.hash(input.utf8)) == expected)  // non-array collection
        #expect(hex(SHA256.hash(secret: SecretBytes(Array(input.utf8)))) == expected)
    }

    @Test("SeededRandom is deterministic per seed")
    func seededDeterminism() {
        let a = SeededRandom(seed: 42)
        let b = SeededRandom(seed: 42)
        let c = SeededRandom(seed: 43)
        let first = a.bytes(100)
        #expect(first == b.bytes(100))
        #expect(first != c.bytes(100))
        #expect(a.uuid() == b.uuid())
        #expect(a.uniform(1000) == b.uniform(1000))
        #expect(a.bytes(3) == b.bytes(3))
        // SplitMix64's first output for seed 0 (reference value).
        #expect(SeededRandom(seed: 0).next64() == 0xE220_A839_7B1D_CDAF)
    }

    @Test("uniform stays in range and covers it")
    func uniform() {
        let random = SeededRandom(seed: 1)
        var seen = Set<UInt64>()
        for _ in 0..<2000 {
            let v = random.uniform(7)
            #expect(v < 7)
            seen.insert(v)
        }
        #expect(seen.count == 7)
        #expect(random.uniform(1) == 0)
        #expect(SystemRandom().uniform(UInt64.max) < UInt64.max)
    }

    @Test("uuid is lowercase RFC 4122 version 4", arguments: [0, 1, 2, 3])
    func uuid(seed: UInt64) {
        for value in [SeededRandom(seed: seed).uuid(), SystemRandom().uuid()] {
            let parts = value.split(separator: "-")
            #expect(parts.map(\.count) == [8, 4, 4, 4, 12])
            #expect(value == value.lowercased())
            #expect(Array(value)[14] == "4")
            #expect("89ab".contains(Array(value)[19]))
            #expect(UUID(uuidString: value) != nil)
        }
    }

    @Test("SystemRandom fills buffers and differs between calls")
    func systemRandom() {
        let random = SystemRandom()
        #expect(random.bytes(0).isEmpty)
        #expect(random.bytes(32) != random.bytes(32))
        #expect(random.secretBytes(32).count == 32)
    }

    @Test("SecretBytes never prints its bytes")
    func secretRedacted() {
        let bytes: [UInt8] = [0xde, 0xad, 0xbe, 0xef, 0xca, 0xfe, 0xba, 0xbe]
        let secret = SecretBytes(bytes)
        for text in ["\(secret)", String(describing: secret), String(reflecting: secret), "\([secret])"] {
            #expect(!text.lowercased().contains("deadbeef"))
            #expect(!text.contains("222"))  // 0xde as decimal
        }
        #expect("\(secret)".contains("redacted"))
    }

    @Test("SecretBytes compares by content")
    func secretEquality() {
        #expect(SecretBytes([1, 2, 3]) == SecretBytes([1, 2, 3]))
        #expect(SecretBytes([1, 2, 3]) != SecretBytes([1, 2, 4]))
        #expect(SecretBytes([1, 2]) != SecretBytes([1, 2, 3]))
    }
}
