import Testing

@testable import BackupModel

@Suite("Hex and Base64 codecs")
struct CodecTests {
    @Test("hex encodes lowercase and decodes either case")
    func hex() {
        #expect(Hex.encode([0x00, 0x0f, 0xab, 0xff]) == "000fabff")
        #expect(Hex.encode([]) == "")
        #expect(Hex.decode("000FabFF") == [0x00, 0x0f, 0xab, 0xff])
        #expect(Hex.decode("") == [])
        #expect(Hex.isHex("09afAF"))
        #expect(!Hex.isHex("0g"))
    }

    @Test("hex rejects garbage", arguments: ["0", "abc", "zz", "0x00", " 00", "00 ", "0-"])
    func hexGarbage(text: String) {
        #expect(Hex.decode(text) == nil)
    }

    /// `isCanonicalUnpadded` says yes exactly when decoding and encoding again (unpadded)
    /// gives the same text back, and it named a byte: every string of up to four characters
    /// from a set that covers both alphabets' own characters, padding, a blank, a non-ASCII
    /// character and last characters with and without trailing bits, then longer ones drawn
    /// from it (a fixed generator).
    @Test(arguments: [Base64.Alphabet.url, .standard])
    func canonicalUnpaddedIsDecodeThenEncode(alphabet: Base64.Alphabet) {
        let symbols = ["A", "B", "C", "E", "Q", "g", "w", "-", "_", "+", "/", "=", " ", "é"]
        func expected(_ text: String) -> Bool {
            guard let bytes = Base64.decode(text, alphabet: alphabet), !bytes.isEmpty else { return false }
            return Base64.encode(bytes, alphabet: alphabet, padding: false) == text
        }
        var texts = [""]
        var level = [""]
        for _ in 1...4 {
            level = level.flatMap { prefix in symbols.map { prefix + $0 } }
            texts += level
        }
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<5_000 {
            var text = ""
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            for _ in 0..<(5 + Int(state >> 60) % 5) {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                text += symbols[Int(state >> 33) % symbols.count]
            }
            texts.append(text)
        }
        var yes = 0
        for text in texts {
            let canonical = Base64.isCanonicalUnpadded(text, alphabet: alphabet)
            if canonical != expected(text) { Issue.record("\(text): \(canonical)") }
            if canonical { yes += 1 }
        }
        #expect(yes > 1_000)
    }

    /// `allUTF8` reads the bytes in place and answers what the view's `allSatisfy` answers:
    /// small (inline) and heap strings, ASCII and not, empty, and a failing byte at either end.
    @Test func allUTF8IsTheViewsAllSatisfy() {
        let texts =
            ["", "a", "abc", "é", String(repeating: "x", count: 40), String(repeating: "x", count: 40) + "é"]
            + ["\"" + String(repeating: "y", count: 30), String(repeating: "y", count: 30) + "\u{7F}"]
        let tests: [(UInt8) -> Bool] = [{ $0 < 0x80 }, { $0 != UInt8(ascii: "\"") }, { (0x20..<0x7F).contains($0) }]
        for text in texts {
            for test in tests { #expect(text.allUTF8(test) == text.utf8.allSatisfy(test), "\(text)") }
        }
    }

    // RFC 4648 §10 vectors.
    @Test(
        "RFC 4648 vectors, padded and unpadded",
        arguments: [
            ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
        ])
    func rfc4648(plain: String, encoded: String) {
        let bytes = Array(plain.utf8)
        #expect(Base64.encode(bytes) == encoded)
        let unpadded = String(encoded.prefix(while: { $0 != "=" }))
        #expect(Base64.encode(bytes, padding: false) == unpadded)
        #expect(Base64.encode(bytes, alphabet: .url, padding: false) == unpadded)
        for alphabet in [Base64.Alphabet.standard, .url] {
            #expect(Base64.decode(encoded, alphabet: alphabet) == bytes)
            #expect(Base64.decode(unpadded, alphabet: alphabet) == bytes)
            #expect(Base64.decode(encoded, alphabet: alphabet, requirePadding: true) == bytes)
        }
        #expect(Base64.decodeLenient(encoded) == bytes)
        #expect(Base64.decodeLenient(unpadded) == bytes)
    }

    @Test("the alphabets differ only in 62 and 63")
    func alphabets() {
        let bytes: [UInt8] = [0xfb, 0xff, 0xbf]
        #expect(Base64.encode(bytes) == "+/+/")
        #expect(Base64.encode(bytes, alphabet: .url) == "-_-_")
        #expect(Base64.decode("+/+/", alphabet: .standard) == bytes)
        #expect(Base64.decode("-_-_", alphabet: .url) == bytes)
        #expect(Base64.decode("+/+/", alphabet: .url) == nil)
        #expect(Base64.decode("-_-_", alphabet: .standard) == nil)
        #expect(Base64.decodeLenient("+/+/") == bytes)
        #expect(Base64.decodeLenient("-_-_") == bytes)
        #expect(Base64.encode([0xfb, 0xff], alphabet: .url, padding: false) == "-_8")
        #expect(Base64.encode([0xfb, 0xff]) == "+/8=")
    }

    @Test(
        "base64 rejects garbage",
        arguments: [
            "Zg=", "Zg===", "Z", "Zm9vY", "Zm9v!", "Zm 9v", "Zm9v\n", "=Zm9", "Zh==", "Zm9=", "Zm=9v",
        ])
    func base64Garbage(text: String) {
        #expect(Base64.decode(text, alphabet: .standard) == nil)
        #expect(Base64.decode(text, alphabet: .url) == nil)
        #expect(Base64.decodeLenient(text) == nil)
    }

    @Test("requirePadding rejects unpadded input")
    func requirePadding() {
        #expect(Base64.decode("Zg", alphabet: .standard, requirePadding: true) == nil)
        #expect(Base64.decode("Zg", alphabet: .standard) == [0x66])
    }

    @Test("round trips over every length up to 70")
    func roundTrip() {
        for length in 0...70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            for alphabet in [Base64.Alphabet.standard, .url] {
                for padding in [true, false] {
                    let text = Base64.encode(bytes, alphabet: alphabet, padding: padding)
                    #expect(Base64.decode(text, alphabet: alphabet, requirePadding: padding) == bytes)
                }
            }
            #expect(Hex.decode(Hex.encode(bytes)) == bytes)
        }
    }
}
