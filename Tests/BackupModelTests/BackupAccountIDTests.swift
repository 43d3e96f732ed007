import Foundation
import Testing

@testable import BackupModel

@Suite("BackupAccountID parsing")
struct BackupAccountIDTests {
    static let valid = "backup_account_039797dc9fec4e3d3f2f27173ba0faac160ee2f803954e8552c308da22ab40ab5c"

    @Test("a valid ID keeps its text and exposes its 33 bytes")
    func valid() throws {
        let id = try BackupAccountID(Self.valid)
        #expect(id.rawValue == Self.valid)
        #expect(id.description == Self.valid)
        #expect(id.publicKey.count == 33)
        #expect(id.publicKey.first == 0x03)
        #expect(BackupAccountID(compressedPublicKey: id.publicKey) == id)
        #expect(id.abbreviated == "backup_account_039797dc…ab5c")
    }

    @Test("an id an operator typed is taken in any case and kept lowercase, as the service writes it")
    func typed() throws {
        #expect(try BackupAccountID(typed: Self.valid.uppercased()).rawValue == Self.valid)
        #expect(
            try BackupAccountID(typed: "Backup_Account_" + Self.valid.dropFirst(15).uppercased()).rawValue == Self.valid
        )
        #expect(try BackupAccountID(typed: Self.valid).rawValue == Self.valid)
        // Parsed as given, an upper-case id keeps its case (what the service would be sent).
        #expect(
            try BackupAccountID(
                Self.valid.uppercased().replacingOccurrences(of: "BACKUP_ACCOUNT_", with: "backup_account_")
            ).rawValue != Self.valid)
        #expect(throws: ConsoleError.self) { try BackupAccountID(typed: "BACKUP_ACCOUNT_ZZ") }
    }

    @Test(
        "what the service rejects, we reject",
        arguments: [
            ("039797dc9fec4e3d3f2f27173ba0faac160ee2f803954e8552c308da22ab40ab5c", "start with"),
            ("Backup_account_039797dc9fec4e3d3f2f27173ba0faac160ee2f803954e8552c308da22ab40ab5c", "start with"),
            ("backup_account_", "33-byte"),
            ("backup_account_zz9797dc9fec4e3d3f2f27173ba0faac160ee2f803954e8552c308da22ab40ab5c", "hex"),
            ("backup_account_039797dc9fec4e3d3f2f27173ba0faac160ee2f803954e8552c308da22ab40ab5", "hex"),
            ("backup_account_039797dc9fec4e3d3f2f27173ba0faac160ee2f803954e8552c308da22ab40ab", "got 32 bytes"),
            ("backup_account_039797dc9fec4e3d3f2f27173ba0faac160ee2f803954e8552c308da22ab40ab5c00", "got 34 bytes"),
        ])
    func invalid(text: String, mention: String) {
        do {
            _ = try BackupAccountID(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.code == "invalid_backup_account_id")
            #expect(error.message.contains(mention), "\(error.message)")
        }
    }

    @Test("Codable as a plain string, and decoding validates")
    func codable() throws {
        let id = try BackupAccountID(Self.valid)
        let data = try JSONEncoder().encode([id])
        #expect(String(decoding: data, as: UTF8.self) == "[\"\(Self.valid)\"]")
        #expect(try JSONDecoder().decode([BackupAccountID].self, from: data) == [id])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([BackupAccountID].self, from: Data(#"["backup_account_00"]"#.utf8))
        }
    }

    @Test("IDs sort by their text")
    func ordering() throws {
        let a = try BackupAccountID("backup_account_02" + String(repeating: "00", count: 32))
        let b = try BackupAccountID(Self.valid)
        #expect(a < b)
    }
}
