import BackupModel
import Foundation
import Testing

@testable import BackupCrypto

/// The shared vectors file (`Vectors/backup-account-id.json`).
struct VectorFile: Decodable {
    struct AccountVector: Decodable, CustomTestStringConvertible, Sendable {
        let rootKeyJson: String
        let materialHex: String
        let subkeyHex: String
        let backupAccountId: String
        var testDescription: String { backupAccountId }
    }

    struct ResetVector: Decodable {
        let rootKeyJson: String
        let backupAccountId: String
        let challengeBase64: String
        let signatureBase64: String
    }

    let backupAccountIds: [AccountVector]
    let resetSignature: ResetVector

    static let shared: VectorFile = {
        guard
            let url = Bundle.module.url(
                forResource: "backup-account-id", withExtension: "json", subdirectory: "Vectors"),
            let data = try? Data(contentsOf: url),
            let file = try? JSONDecoder().decode(VectorFile.self, from: data)
        else { fatalError("Vectors/backup-account-id.json is missing or malformed") }
        return file
    }()
}

/// Hex of a secret, for comparing with vectors (tests only).
func hex(_ secret: SecretBytes) -> String {
    secret.withUnsafeBytes { Hex.encode($0) }
}

func rootKey(_ json: String) throws -> RootKey {
    try RootKey(json: Array(json.utf8))
}

/// Minimal DER handling for ECDSA signatures, to build malleated test inputs.
enum DERSignature {
    static let secp256k1Order: [UInt8] = Hex.decode(
        "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141")!

    /// (r, s) as 32-byte big-endian values.
    static func parse(_ der: [UInt8]) -> (r: [UInt8], s: [UInt8]) {
        precondition(der[0] == 0x30)
        var i = 2
        func integer() -> [UInt8] {
            precondition(der[i] == 0x02)
            let length = Int(der[i + 1])
            var value = Array(der[(i + 2)..<(i + 2 + length)])
            i += 2 + length
            while value.count > 32, value.first == 0 { value.removeFirst() }
            return [UInt8](repeating: 0, count: 32 - value.count) + value
        }
        let r = integer()
        let s = integer()
        return (r, s)
    }

    static func encode(r: [UInt8], s: [UInt8]) -> [UInt8] {
        func integer(_ value: [UInt8]) -> [UInt8] {
            var v = Array(value.drop(while: { $0 == 0 }))
            if v.isEmpty { v = [0] }
            if v[0] & 0x80 != 0 { v.insert(0, at: 0) }
            return [0x02, UInt8(v.count)] + v
        }
        let body = integer(r) + integer(s)
        return [0x30, UInt8(body.count)] + body
    }

    /// `a - b` for 32-byte big-endian values with a ≥ b.
    static func subtract(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for i in stride(from: 31, through: 0, by: -1) {
            var d = Int(a[i]) - Int(b[i]) - borrow
            borrow = d < 0 ? 1 : 0
            if d < 0 { d += 256 }
            out[i] = UInt8(d)
        }
        return out
    }

    /// The same signature with s replaced by n - s (valid maths, but high-S if s was low).
    static func flippingS(_ der: [UInt8], order: [UInt8] = secp256k1Order) -> [UInt8] {
        let (r, s) = parse(der)
        return encode(r: r, s: subtract(order, s))
    }
}
