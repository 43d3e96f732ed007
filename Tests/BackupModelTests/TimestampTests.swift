import Foundation
import Testing

@testable import BackupModel

@Suite("Timestamp")
struct TimestampTests {
    @Test(
        "RFC 3339 parsing",
        arguments: [
            ("2026-05-01T10:00:00Z", Int64(1_777_629_600)),
            ("2026-05-01t10:00:00z", 1_777_629_600),
            ("2026-05-01T10:00:00+00:00", 1_777_629_600),
            ("2026-05-01T10:00:00-00:00", 1_777_629_600),
            ("2026-05-01T10:00:00+02:00", 1_777_622_400),
            ("2026-05-01T10:00:00-05:30", 1_777_649_400),
            ("2026-05-01T10:00:00.5Z", 1_777_629_600),
            ("2026-05-01T10:00:00.123456789Z", 1_777_629_600),
            ("2026-05-01T10:00:00.999999999+02:00", 1_777_622_400),
            ("1970-01-01T00:00:00Z", 0),
            ("1969-12-31T23:59:59Z", -1),
            ("2000-02-29T12:34:56Z", 951_827_696),
        ])
    func parse(text: String, seconds: Int64) throws {
        let t = try #require(Timestamp(rfc3339: text))
        #expect(t.seconds == seconds)
        #expect(t.rfc3339 == text)
    }

    @Test(
        "malformed RFC 3339 is rejected",
        arguments: [
            "", "2026-05-01", "2026-05-01T10:00:00", "2026-05-01 10:00:00Z", "2026-13-01T10:00:00Z",
            "2026-05-00T10:00:00Z", "2026-05-01T24:00:00Z", "2026-05-01T10:60:00Z", "2026-05-01T10:00:00.Z",
            "2026-05-01T10:00:00+0200", "2026-05-01T10:00:00+02", "2026-05-01T10:00:00Zx", "26-05-01T10:00:00Z",
            "2026-05-01T10:00:00ZZ", "1777629600",
        ])
    func malformed(text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test(
        "formatting is UTC with a Z, and parses back",
        arguments: [Int64(0), -1, 951_827_696, 1_777_629_600, 4_102_444_800])
    func format(seconds: Int64) throws {
        let text = Timestamp.format(seconds)
        #expect(text.count == 20 && text.hasSuffix("Z"))
        #expect(Timestamp(rfc3339: text)?.seconds == seconds)
        #expect(Timestamp(seconds: seconds).description == text)
        #expect(Timestamp(seconds: seconds).rfc3339 == text)
    }

    @Test("known formats")
    func knownFormats() {
        #expect(Timestamp.format(0) == "1970-01-01T00:00:00Z")
        #expect(Timestamp.format(-1) == "1969-12-31T23:59:59Z")
        #expect(Timestamp.format(951_827_696) == "2000-02-29T12:34:56Z")
        // description normalises an offset to UTC; rfc3339 keeps the original text.
        let t = Timestamp(rfc3339: "2026-05-01T10:00:00+02:00")
        #expect(t?.description == "2026-05-01T08:00:00Z")
    }

    @Test("decodes from unix seconds or RFC 3339; rejects other strings")
    func codable() throws {
        let decoded = try JSONDecoder().decode(
            [Timestamp].self, from: Data(#"[1777629600, "2026-05-01T10:00:00Z"]"#.utf8))
        #expect(decoded[0] == decoded[1])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([Timestamp].self, from: Data(#"["yesterday"]"#.utf8))
        }
    }

    @Test("ordering follows the instant, not the text")
    func ordering() throws {
        let a = try #require(Timestamp(rfc3339: "2026-05-01T10:00:00+02:00"))
        let b = try #require(Timestamp(rfc3339: "2026-05-01T09:00:00Z"))
        #expect(a < b)
    }
}
