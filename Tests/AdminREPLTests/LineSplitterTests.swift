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
}
