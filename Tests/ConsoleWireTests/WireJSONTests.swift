import BackupCrypto
import BackupModel
import ConsoleWire
import Foundation
import Testing

/// The server reads a body once (``WireJSON``): what it accepts must read exactly as
/// `JSONDecoder` reads it, and what it refuses must be what RFC 8259 and I-JSON refuse.
@Suite struct WireJSONTests {
    static func decoded(_ text: [UInt8]) -> JSONValue? { try? JSONDecoder().decode(JSONValue.self, from: Data(text)) }

    static let readable: [(String, JSONValue)] = [
        ("1.0", JSONValue.int(1)), ("1e2", .int(100)), ("-0", .int(0)), ("1.5", .double(1.5)),
        ("0.1e1", .int(1)), ("1E+2", .int(100)), ("-1e-400", .int(0)), ("123.456e-2", .double(1.23456)),
        ("9223372036854775807", .int(.max)), ("-9223372036854775808", .int(.min)),
        ("9223372036854775808", .double(9_223_372_036_854_775_808)),
        (#"{"a":[true,false,null],"b":{}}"#, ["a": [true, false, .null], "b": [:]]),
        (#" [ 1 ,"x" ] "#, [1, "x"]), (#""\u0000\/\"\\\b\f\n\r\t""#, .string("\0/\"\\\u{8}\u{c}\n\r\t")),
        (#""\uD834\uDD1E é""#, .string("𝄞 é")), (#"{"":0}"#, ["": 0]), ("\t\r\n1", .int(1)),
    ]

    @Test(arguments: readable)
    func readsWhatJSONDecoderReads(_ text: String, _ expected: JSONValue) throws {
        #expect(try WireJSON.parse(Array(text.utf8)) == expected)
        #expect(Self.decoded(Array(text.utf8)) == expected)
    }

    /// What `JSONDecoder` accepts and this reader refuses (two ways to read one body, or not
    /// RFC 8259 at all), and what both refuse.
    @Test(arguments: [
        (#"{"a":1,"a":2}"#, "a name repeated in one object at byte 7"),
        ("[1,]", "expected a value at byte 3"), (#"{"a":1,}"#, "expected a name at byte 7"),
        ("\u{feff}1", "expected a value at byte 0"), ("01", "a number with a leading zero at byte 1"),
        ("1.", "expected a digit at byte 2"), (".5", "expected a value at byte 0"),
        ("+1", "expected a value at byte 0"),
        ("-", "expected a digit at byte 1"), ("1E400", "a number beyond the range of a double at byte 0"),
        ("NaN", "expected a value at byte 0"), ("1 2", "text after the JSON value at byte 2"),
        (#""\ud800""#, "a lone high surrogate at byte 7"), (#""\udc00""#, "a lone low surrogate at byte 7"),
        (#""\ud834x""#, "a lone high surrogate at byte 7"), (#""\U0041""#, "an unknown escape at byte 2"),
        ("\"a\u{1}b\"", "a control character in a string at byte 2"), ("nul", "expected a value at byte 0"),
        ("", "unexpected end at byte 0"), ("\u{b}1", "expected a value at byte 0"),
        (#"{"a" 1}"#, "expected ':' at byte 5"),
    ])
    func refusesWhatIsNotStrictJSON(_ text: String, _ reason: String) {
        #expect(throws: WireJSON.Failure.self) { try WireJSON.parse(Array(text.utf8)) }
        do {
            _ = try WireJSON.parse(Array(text.utf8))
        } catch {
            #expect(error.description == reason)
        }
    }

    @Test func refusesWhatIsNotUTF8() {
        let bodies: [[UInt8]] = [
            [0x22, 0xC3, 0x28, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xC0, 0xAF, 0x22],
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0xFE, 0xFF, 0x00, 0x31], [0x31, 0x00], [0x00, 0x31], [0xFF],
        ]
        for body in bodies {
            #expect(throws: WireJSON.Failure.self, "\(body)") { try WireJSON.parse(body) }
        }
    }

    @Test func nestingStopsAtJSONDecodersLimit() throws {
        func nested(_ depth: Int) -> [UInt8] {
            Array(repeating: UInt8(ascii: "["), count: depth) + Array(repeating: UInt8(ascii: "]"), count: depth)
        }
        _ = try WireJSON.parse(nested(WireJSON.maximumDepth))
        #expect(Self.decoded(nested(WireJSON.maximumDepth)) != nil)
        #expect(throws: WireJSON.Failure(offset: 512, reason: "nested too deep")) {
            try WireJSON.parse(nested(WireJSON.maximumDepth + 1))
        }
    }

    /// Seeded random documents, written with random spacing and number forms and then mutated
    /// byte by byte: whatever this reader accepts, `JSONDecoder` reads as the same value.
    @Test func agreesWithJSONDecoderOnRandomAndMutatedText() throws {
        var random = Seeded(seed: 0x5EED_0027)
        var accepted = 0
        for round in 0..<3000 {
            var text = Array(Self.write(Self.randomValue(&random, depth: 0), &random).utf8)
            if round % 2 == 1 {
                for _ in 0..<Int.random(in: 1...3, using: &random) where !text.isEmpty {
                    let at = Int.random(in: 0..<text.count, using: &random)
                    let byte = Self.pick(Self.mutationBytes, &random)
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0: text[at] = byte
                    case 1: text.insert(byte, at: at)
                    default: text.remove(at: at)
                    }
                }
            }
            guard let mine = try? WireJSON.parse(text) else {
                #expect(round % 2 == 1, "a written document was refused: \(String(decoding: text, as: UTF8.self))")
                continue
            }
            accepted += 1
            #expect(Self.decoded(text) == mine, "\(String(decoding: text, as: UTF8.self))")
        }
        #expect(accepted > 1500)
    }

    static let mutationBytes = Array(#"{}[],:"\ 0123456789.eE+-tfnulx"#.utf8) + [0x00, 0x1F, 0x7F, 0xC3, 0xFF]

    static func pick<T>(_ choices: [T], _ random: inout Seeded) -> T {
        choices[Int.random(in: 0..<choices.count, using: &random)]
    }

    static func randomValue(_ random: inout Seeded, depth: Int) -> JSONValue {
        switch Int.random(in: 0..<(depth < 4 ? 9 : 6), using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .int(Int64.random(in: -1_000_000...1_000_000, using: &random))
        case 3: return .int(Int64.random(in: .min ... .max, using: &random))
        case 4: return .double(Double.random(in: -1e6...1e6, using: &random))
        case 5: return .string(randomString(&random))
        case 6, 7:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...4, using: &random) {
                members[randomString(&random)] = randomValue(&random, depth: depth + 1)
            }
            return .object(members)
        default:
            return .array(
                (0..<Int.random(in: 0...4, using: &random)).map { _ in randomValue(&random, depth: depth + 1) })
        }
    }

    static func randomString(_ random: inout Seeded) -> String {
        let pieces = ["a", "Z", "é", "𝄞", "\"", "\\", "/", "\n", "\u{1}", "\u{7F}", " ", "\u{FFFF}", "中"]
        return (0..<Int.random(in: 0...6, using: &random)).map { _ in pick(pieces, &random) }.joined()
    }

    /// The value as text: spaces anywhere JSON allows them, strings with raw or escaped
    /// characters, integers sometimes with a fraction or an exponent.
    static func write(_ value: JSONValue, _ random: inout Seeded) -> String {
        let space = pick([" ", "", "", "\n", "\t ", "\r\n"], &random)
        switch value {
        case .null: return space + "null"
        case .bool(let flag): return space + (flag ? "true" : "false")
        case .int(let int):
            switch Int.random(in: 0..<4, using: &random) {
            case 0 where abs(int) < 1_000_000: return space + "\(int).0"
            case 1 where abs(int) < 1_000_000: return space + "\(int)e0"
            default: return space + "\(int)"
            }
        case .double(let double): return space + "\(double)"
        case .string(let text): return space + quoted(text, &random)
        case .array(let items):
            return space + "[" + items.map { write($0, &random) }.joined(separator: ",") + space + "]"
        case .object(let members):
            let written = members.sorted { $0.key < $1.key }.map {
                quoted($0.key, &random) + space + ":" + write($0.value, &random)
            }
            return space + "{" + written.joined(separator: ",") + space + "}"
        }
    }

    static func quoted(_ text: String, _ random: inout Seeded) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += Bool.random(using: &random) ? "\\\\" : "\\u005C"
            case "/": out += Bool.random(using: &random) ? "/" : "\\/"
            case "\n": out += "\\n"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            case _ where scalar.value > 0xFFFF && Bool.random(using: &random):
                for unit in String(scalar).utf16 { out += String(format: "\\u%04X", unit) }
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    // MARK: Decoding from the parsed value

    enum Colour: String, Codable, Equatable { case red, green }

    struct Sample: Codable, Equatable {
        var name: String
        var count: Int
        var small: Int8
        var big: UInt64
        var ratio: Double
        var share: Float
        var flag: Bool
        var colour: Colour
        var note: String?
        var missing: Int?
        var blob: Data
        var when: Date
        var link: URL
        var tags: [String]
        var grid: [[Int?]]
        var table: [String: Int]
        var byNumber: [Int: String]
        var value: JSONValue
        var nested: Nested?
    }

    struct Nested: Codable, Equatable {
        var depth: Int
        var more: [Nested]
    }

    static let sample = #"""
        {"name":"n","count":3.0,"small":-128,"big":18446744073709549568,"ratio":2,"share":0.5,"flag":true,
         "colour":"green","note":null,"blob":"AAEC","when":1.5,"link":"https://example.org/a?b=c","tags":["x"],
         "grid":[[1,null],[]],"table":{"a":1},"byNumber":{"7":"seven"},"value":{"k":[1,"2",null]},
         "nested":{"depth":1,"more":[{"depth":2,"more":[]}]}}
        """#

    @Test func decodesAsJSONDecoderDoes() throws {
        let text = Array(Self.sample.utf8)
        let mine = try WireJSON.decode(Sample.self, from: WireJSON.parse(text))
        #expect(mine == (try JSONDecoder().decode(Sample.self, from: Data(text))))
        #expect(mine.big == 18_446_744_073_709_549_568 && mine.count == 3 && mine.blob == Data([0, 1, 2]))
    }

    /// Each refusal is the same `DecodingError` case at the same coding path as `JSONDecoder`'s
    /// (which leaves the path of a number that does not fit its type empty; this one names it).
    @Test(arguments: [
        (#""name":1"#, "typeMismatch name"), (#""name":null"#, "valueNotFound name"),
        (#""small":128"#, "dataCorrupted small"), (#""count":1.5"#, "dataCorrupted count"),
        (#""colour":"blue""#, "dataCorrupted colour"), (#""blob":"%%""#, "dataCorrupted blob"),
        (#""share":1e300"#, "dataCorrupted share"), (#""grid":[[1,"x"]]"#, "typeMismatch grid.Index 0.Index 1"),
        (#""tags":{}"#, "typeMismatch tags"), (#""nested":{"depth":1}"#, "keyNotFound nested"),
        (#""nested":{"depth":1,"more":[{"more":[]}]}"#, "keyNotFound nested.more.Index 0"),
    ])
    func refusesAsJSONDecoderDoes(_ replacement: String, _ expected: String) throws {
        let field = String(replacement.prefix { $0 != ":" })
        var text = Self.sample
        let range = try #require(text.range(of: "\(field):"))
        let end = try #require(Self.endOfValue(in: text, from: range.upperBound))
        text.replaceSubrange(range.lowerBound..<end, with: replacement)
        let bytes = Array(text.utf8)
        #expect(Self.describe { try WireJSON.decode(Sample.self, from: WireJSON.parse(bytes)) } == expected)
        // The same case from JSONDecoder; its numbers that do not fit carry no coding path.
        let theirs = Self.describe { try JSONDecoder().decode(Sample.self, from: Data(bytes)) }
        #expect(theirs == expected || theirs == expected.prefix { $0 != " " } + " ")
    }

    @Test func aMissingFieldIsKeyNotFoundAtItsContainer() throws {
        let text = Array(Self.sample.replacingOccurrences(of: #""flag":true,"#, with: "").utf8)
        #expect(Self.describe { try WireJSON.decode(Sample.self, from: WireJSON.parse(text)) } == "keyNotFound ")
        #expect(Self.describe { try JSONDecoder().decode(Sample.self, from: Data(text)) } == "keyNotFound ")
    }

    /// The end of the JSON value starting at `start` (balanced brackets, strings skipped).
    static func endOfValue(in text: String, from start: String.Index) -> String.Index? {
        var depth = 0
        var inString = false
        var escaped = false
        var index = start
        while index < text.endIndex {
            let character = text[index]
            if inString {
                if escaped {
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    inString = false
                }
            } else if character == "\"" {
                inString = true
            } else if "[{".contains(character) {
                depth += 1
            } else if "]}".contains(character) {
                if depth == 0 { return index }
                depth -= 1
            } else if character == ",", depth == 0 {
                return index
            }
            index = text.index(after: index)
        }
        return nil
    }

    static func describe(_ body: () throws -> Sample) -> String {
        do {
            _ = try body()
            return "decoded"
        } catch let error as DecodingError {
            let (kind, context): (String, DecodingError.Context) =
                switch error {
                case .typeMismatch(_, let context): ("typeMismatch", context)
                case .valueNotFound(_, let context): ("valueNotFound", context)
                case .keyNotFound(_, let context): ("keyNotFound", context)
                case .dataCorrupted(let context): ("dataCorrupted", context)
                @unknown default: ("unknown", DecodingError.Context(codingPath: [], debugDescription: ""))
                }
            return kind + " " + context.codingPath.map(\.stringValue).joined(separator: ".")
        } catch {
            return "other \(error)"
        }
    }
}

/// The console's seeded source (``SeededRandom``) as a generator, so a failure names a document
/// that can be made again.
struct Seeded: RandomNumberGenerator {
    let source: SeededRandom
    init(seed: UInt64) { source = SeededRandom(seed: seed) }
    mutating func next() -> UInt64 {
        var word: UInt64 = 0
        withUnsafeMutableBytes(of: &word) { source.fill($0) }
        return word
    }
}
