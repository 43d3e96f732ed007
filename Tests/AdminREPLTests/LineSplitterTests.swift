import Testing

@testable import AdminREPL

@Suite("Script lines")
struct LineSplitterTests {
    @Test("blanks and comments are skipped; surrounding whitespace and CRLF endings go")
    func scriptLines() async throws {
        #expect(LineSplitter.scriptLine("") == nil)
        #expect(LineSplitter.scriptLine(" \t \r") == nil)
        #expect(LineSplitter.scriptLine("# lookup passkey AQID") == nil)
        #expect(LineSplitter.scriptLine("   # indented comment") == nil)
        #expect(LineSplitter.scriptLine("lookup passkey AQID\r") == "lookup passkey AQID")
        #expect(LineSplitter.scriptLine("\t show  x \u{00A0}") == "show  x")
        #expect(LineSplitter.scriptLine("show é") == "show é")
        #expect(
            try LineSplitter.split(LineSplitter.scriptLine("lookup oidc google 'a b'\r\n") ?? "") == [
                "lookup", "oidc", "google", "a b",
            ])
    }

    /// Split by bytes, a script's lines are the ones splitting its text by `Character` at `\n`
    /// and `\r\n` gives, for any bytes (CR, LF, combining marks, cut and invalid UTF-8).
    @Test func aScriptSplitsIntoTheSameLinesByBytes() {
        let pieces: [[UInt8]] = [
            [0x0A], [0x0D], [0x0D, 0x0A], [0x61], [0x20], [0x23], [0xCC, 0x81], [0xE2, 0x80, 0xA8], [0xE2], [0xFF],
            [0xC3, 0xA9], [0xF0, 0x9F, 0x87, 0xBA],
        ]
        var generator = SystemRandomNumberGenerator()
        for round in 0..<3000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 0..<(round < 100 ? 4 : 24), using: &generator) {
                bytes += pieces.randomElement(using: &generator) ?? []
            }
            let byCharacter = String(decoding: bytes, as: UTF8.self)
                .split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
                .map(String.init)
            #expect(LineSplitter.lines(of: bytes) == byCharacter, "\(bytes)")
        }
        #expect(LineSplitter.lines(of: Array("a\r\nb\n\nc\r".utf8)) == ["a", "b", "", "c\r"])
    }

    /// The quick path for lines that begin and end with visible ASCII agrees with the general one.
    @Test func visibleASCIIEndsNeedNoTrimming() {
        #expect(LineSplitter.scriptLine("lookup passkey AQID") == "lookup passkey AQID")
        #expect(LineSplitter.scriptLine("#x") == nil)
        #expect(LineSplitter.scriptLine("a\u{00A0}b") == "a\u{00A0}b")
        #expect(LineSplitter.scriptLine("show x\u{301}") == "show x\u{301}")
    }
}
