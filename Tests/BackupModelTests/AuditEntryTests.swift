import Foundation
import Testing

@testable import BackupModel

@Suite("AuditEntry canonical bytes")
struct AuditEntryTests {
    @Test("compact JSON, sorted keys, explicit nulls, unescaped slashes")
    func canonical() {
        let bytes = AuditEntry.canonicalBytes(
            seq: 1, at: 1_700_000_000_000, operatorName: "alice", tenant: nil, action: "backup.show",
            target: nil, details: ["z": "1", "a": "x/y"])
        #expect(
            String(decoding: bytes, as: UTF8.self)
                == #"{"action":"backup.show","at":1700000000000,"details":{"a":"x/y","z":"1"},"operator":"alice","seq":1,"target":null,"tenant":null}"#
        )
    }

    @Test("stable across calls and independent of dictionary insertion order")
    func stable() {
        var d1: [String: String] = [:]
        var d2: [String: String] = [:]
        for i in 0..<50 { d1["k\(i)"] = "\(i)" }
        for i in (0..<50).reversed() { d2["k\(i)"] = "\(i)" }
        let a = AuditEntry.canonicalBytes(
            seq: 7, at: 1, operatorName: "op", tenant: "prod", action: "reset.complete", target: "t",
            details: d1)
        let b = AuditEntry.canonicalBytes(
            seq: 7, at: 1, operatorName: "op", tenant: "prod", action: "reset.complete", target: "t",
            details: d2)
        #expect(a == b)
        #expect(!a.isEmpty)
    }

    @Test("an absent tenant and an empty one hash differently")
    func nullsMatter() {
        let absent = AuditEntry.canonicalBytes(
            seq: 1, at: 1, operatorName: "op", tenant: nil, action: "a", target: nil, details: [:])
        let empty = AuditEntry.canonicalBytes(
            seq: 1, at: 1, operatorName: "op", tenant: "", action: "a", target: nil, details: [:])
        #expect(absent != empty)
    }

    @Test("an entry's canonical bytes come from its draft fields, not its hashes")
    func entry() {
        let draft = AuditDraft(
            operatorName: "op", tenant: "prod", action: "backup.show", target: "b1", details: ["k": "v"])
        let e1 = AuditEntry(seq: 3, at: 9, draft: draft, prevHash: AuditEntry.genesisHash, hash: "aa")
        let e2 = AuditEntry(seq: 3, at: 9, draft: draft, prevHash: "bb", hash: "cc")
        #expect(e1.canonicalBytes == e2.canonicalBytes)
        #expect(
            e1.canonicalBytes
                == AuditEntry.canonicalBytes(
                    seq: 3, at: 9, operatorName: "op", tenant: "prod", action: "backup.show", target: "b1",
                    details: ["k": "v"]))
        #expect(AuditEntry.genesisHash == String(repeating: "0", count: 64))
    }
}
