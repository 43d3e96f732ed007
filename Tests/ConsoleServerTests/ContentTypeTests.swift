import Testing

@testable import ConsoleServer

/// An operation's `Content-Type` is judged by its media type alone (RFC 9110 §8.3.1: type and
/// subtype are case-insensitive, parameters follow a `;`), the usual header byte by byte.
@Suite struct ContentTypeTests {
    @Test func onlyApplicationJSONIsTaken() {
        let accepted = [
            "application/json", "Application/JSON", "application/json; charset=utf-8", " application/json\t",
            "APPLICATION/JSON;", "application/json ;q", "\u{A0}application/json",
        ]
        for value in accepted {
            #expect(HTTPAnswer.unsupportedMediaType(value) == nil, "\(value.debugDescription)")
        }
        let refused: [String?] = [
            nil, "", ";", "application/jsonx", "application/x-json", "text/json", "application/ json",
            "applicatio/json", "application/json\u{0}", "applicationXjson", "application/json/",
        ]
        for value in refused {
            #expect(HTTPAnswer.unsupportedMediaType(value)?.status.code == 415, "\(String(describing: value))")
        }
    }

    @Test func theSchemeIsComparedWithoutRegardToCase() {
        #expect(HTTPAnswer.asciiCaseInsensitive("BeArEr ".utf8, equals: "bearer "))
        #expect(!HTTPAnswer.asciiCaseInsensitive("bearer".utf8, equals: "bearer "))
        #expect(!HTTPAnswer.asciiCaseInsensitive("b\u{C9}arer ".utf8.prefix(7), equals: "bearer "))
        // Only letters fold: `@` (0x40) is not a `` ` `` (0x60), nor `[` a `{`.
        #expect(!HTTPAnswer.asciiCaseInsensitive("@".utf8, equals: "`"))
    }
}
