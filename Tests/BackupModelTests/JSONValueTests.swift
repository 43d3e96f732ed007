import BackupModel
import Foundation
import Testing

/// `JSONValue` decodes every kind of JSON to its own case, whatever order it tries them in.
@Suite struct JSONValueTests {
    @Test func everyKindDecodesToItsOwnCase() throws {
        let text = #"{"s":"x","e":"","o":{"a":[1,2.5,true,false,null,[],{}]},"n":-3,"big":1e300,"t":"true","one":"1"}"#
        let value = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        let expected: JSONValue = [
            "s": "x", "e": "", "o": ["a": [1, .double(2.5), true, false, nil, [], [:]]], "n": -3,
            "big": .double(1e300), "t": "true", "one": "1",
        ]
        #expect(value == expected)
        // And back: the same value again.
        #expect(try JSONDecoder().decode(JSONValue.self, from: try JSONEncoder().encode(value)) == value)
    }

    @Test func aNumberPastDoubleIsRefused() {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(JSONValue.self, from: Data("1e400".utf8)) }
    }
}
