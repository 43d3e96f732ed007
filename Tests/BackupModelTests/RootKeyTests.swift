import Testing

@testable import BackupModel

@Suite("RootKey parsing")
struct RootKeyTests {
    static let hex64 = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

    func parse(_ text: String) throws(ConsoleError) -> RootKey {
        try RootKey(json: Array(text.utf8))
    }

    func bytes(_ secret: SecretBytes) -> [UInt8] {
        secret.withUnsafeBytes { Array($0) }
    }

    func error(_ text: String) -> ConsoleError? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return error
        }
    }

    @Test("V1 with 64 hex characters")
    func v1() throws {
        let key = try parse(#"{"version":"V1","key":"\#(Self.hex64)"}"#)
        #expect(key.version == .v1)
        #expect(bytes(key.secret) == Array(0..<32))
    }

    @Test("V1 accepts uppercase hex as the same bytes")
    func v1Uppercase() throws {
        let key = try parse(#"{"version":"V1","key":"\#(Self.hex64.uppercased())"}"#)
        #expect(bytes(key.secret) == Array(0..<32))
    }

    @Test("V1 with 31 bytes names the 64 characters it needs")
    func v1Short() throws {
        let failure = try #require(error(#"{"version":"V1","key":"\#(Self.hex64.dropLast(2))"}"#))
        #expect(failure.code == "invalid_root_key")
        #expect(failure.kind == .invalidInput)
        #expect(failure.message.contains("64"))
        #expect(failure.message.contains("62"))
    }

    @Test("V1 with 33 bytes is rejected")
    func v1Long() {
        #expect(error(#"{"version":"V1","key":"\#(Self.hex64)00"}"#)?.code == "invalid_root_key")
    }

    @Test("V1 that is not hex is rejected without echoing the key")
    func v1NotHex() throws {
        let bad = "zz" + Self.hex64.dropFirst(2)
        let failure = try #require(error(#"{"version":"V1","key":"\#(bad)"}"#))
        #expect(failure.message.contains("hex"))
        #expect(!failure.message.contains(String(bad.prefix(12))))
    }

    @Test(
        "malformed input is one clear error",
        arguments: [
            ("", "empty"),
            ("   \n", "empty"),
            (#"{"version":"V1"}"#, "\"key\""),
            (#"{"key":"abc"}"#, "\"version\""),
            ("{}", "\"version\""),
            (#"{"version":"V2","key":"abc"}"#, "V2"),
            (#"{"version":"V0","key":""}"#, "empty"),
            (#"["V1"]"#, "JSON object"),
            (#"{"version":"V0","key":"abc"} x"#, "after"),
            (#"{"version":"V0","key":"abc""#, "malformed"),
            (#"{"version":"V0","key":"a\qb"}"#, "escape"),
            (#"{"version":"V0" "key":"abc"}"#, "malformed"),
        ])
    func malformed(input: String, mention: String) throws {
        let failure = try #require(error(input))
        #expect(failure.code == "invalid_root_key")
        #expect(failure.message.contains(mention), "\(failure.message)")
    }

    /// The fields swapped: the "version" holds the key, and is not repeated.
    @Test func aKeyGivenAsTheVersionIsNotRepeated() throws {
        let failure = try #require(error(#"{"version":"0001020304050607","key":"V1"}"#))
        #expect(failure.code == "invalid_root_key" && !failure.message.contains("0001"), "\(failure.message)")
    }

    @Test("V0 keeps the UTF-8 bytes of the string")
    func v0() throws {
        let key = try parse(#"{"version":"V0","key":"correct horse battery staple"}"#)
        #expect(key.version == .v0)
        #expect(bytes(key.secret) == Array("correct horse battery staple".utf8))
    }

    @Test("V0 does not hex-decode a hex-looking string")
    func v0Hex() throws {
        let key = try parse(#"{"version":"V0","key":"\#(Self.hex64)"}"#)
        #expect(bytes(key.secret) == Array(Self.hex64.utf8))
    }

    @Test("whitespace around and inside the object is tolerated; member order and extra members too")
    func whitespace() throws {
        let text = "\n\t {  \"key\" :\r\n \"\(Self.hex64)\" ,\n \"extra\": \"x\", \"version\"\t:\"V1\"  }\n\n"
        let key = try parse(text)
        #expect(key.version == .v1)
        #expect(bytes(key.secret) == Array(0..<32))
    }

    @Test("JSON escapes in a V0 key are decoded")
    func escapes() throws {
        let key = try parse(#"{"version":"V0","key":"a\"b\\c\/d\n\u00e9\t"}"#)
        #expect(bytes(key.secret) == Array("a\"b\\c/d\né\t".utf8))
    }

    @Test("description never shows the key")
    func redacted() throws {
        let key = try parse(#"{"version":"V1","key":"\#(Self.hex64)"}"#)
        #expect(!"\(key)".contains("0102"))
        #expect("\(key)".contains("V1"))
        #expect(!String(reflecting: key.secret).contains("0102"))
    }
}
