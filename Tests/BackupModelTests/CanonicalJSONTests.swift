import BackupModel
import Foundation
import Testing

/// The hand-written canonical JSON must be JSONEncoder's bytes, or old audit entries stop verifying.
@Suite("Canonical JSON")
struct CanonicalJSONTests {
    /// Deterministic strings over the characters that need care: quotes, backslashes, slashes,
    /// every control character, DEL, non-ASCII and astral scalars.
    static func strings(count: Int, seed: UInt64) -> [String] {
        var state = seed
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        let alphabet: [Unicode.Scalar] =
            (0..<0x20).compactMap(Unicode.Scalar.init) + ["\"", "\\", "/", "\u{7F}", "a", "Z", "_", "0", "9", " "]
            + ["é", "\u{2028}", "\u{FEFF}", "😀", "ß", "\u{0301}"]
        return (0..<count).map { _ in
            var text = String.UnicodeScalarView()
            for _ in 0..<Int(next() % 12) { text.append(alphabet[Int(next() % UInt64(alphabet.count))]) }
            return String(text)
        }
    }

    @Test("audit entries: hand-written bytes equal JSONEncoder's")
    func canonicalBytes() {
        let texts = Self.strings(count: 400, seed: 7)
        for i in stride(from: 0, to: texts.count - 8, by: 4) {
            let details = Dictionary(
                [("kind", texts[i]), ("scope", texts[i + 1]), ("a_b", texts[i + 2]), ("B9", texts[i + 3])],
                uniquingKeysWith: { a, _ in a })
            for tenant in [texts[i + 4], nil] as [String?] {
                let fast = AuditEntry.canonicalBytes(
                    seq: Int64(i) - 3, at: Int64.max - Int64(i), operatorName: texts[i + 5], tenant: tenant,
                    action: texts[i + 6], target: i % 8 == 0 ? nil : texts[i + 7], details: details)
                let reference = AuditEntry.encoderCanonicalBytes(
                    seq: Int64(i) - 3, at: Int64.max - Int64(i), operatorName: texts[i + 5], tenant: tenant,
                    action: texts[i + 6], target: i % 8 == 0 ? nil : texts[i + 7], details: details)
                #expect(fast == reference, "\(String(decoding: fast, as: UTF8.self))")
            }
        }
    }

    @Test("detail objects: ASCII keys hand-written, equal to JSONEncoder; other keys through it")
    func objects() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let texts = Self.strings(count: 200, seed: 11)
        let keySets: [[String]] = [
            [], ["kind"], ["scope", "kind", "outcome"], ["a10", "a9", "A", "_x", "a_b", "ab", "Z"], ["é", "e", "f"],
        ]
        for (n, keys) in keySets.enumerated() {
            let details = Dictionary(
                uniqueKeysWithValues: keys.enumerated().map { ($0.element, texts[(n * 7 + $0.offset) % texts.count]) })
            let reference = String(decoding: try encoder.encode(details), as: UTF8.self)
            #expect(CanonicalJSON.objectText(details) == reference)
            #expect((CanonicalJSON.object(details) == nil) == keys.contains("é"))
        }
    }
}
