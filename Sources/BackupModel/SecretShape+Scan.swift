/// ``SecretShape``'s detectors over a line's characters read once into arrays — each
/// character's ASCII code (or none) and what the `Character` predicates say of it — instead of
/// walking `String.Index`es again for every rule: every error a script prints and every logged
/// message is filtered.
///
/// A `Character` is judged only by the predicates it was judged by when the rules walked
/// `Character`s (and by equality with one ASCII character), so the scan finds what they found
/// on any line; `SecretShapeScanTests` holds it equal to them on generated lines. The URL
/// detector walks the line itself, only where `://` appears.
extension SecretShape {
    /// The secret-shaped stretches of `line`, in order.
    static func scannedRanges(_ line: String, halfKeys: Bool) -> [Range<String.Index>] {
        let scan = CharacterScan(line)
        let found = scan.tokens() + scan.base64Keys() + scan.hexKeys(halfKeys: halfKeys)
        var ranges = found.map { scan.starts[$0.lowerBound]..<scan.starts[$0.upperBound] }
        if hasScheme(line) { ranges += urlPasswords(line) }
        return ranges.sorted { $0.lowerBound < $1.lowerBound }
    }

    /// Whether the bytes `://` appear, which any match of the URL detector needs.
    private static func hasScheme(_ line: String) -> Bool {
        var matched = 0
        for byte in line.utf8 {
            if byte == UInt8(ascii: ":") {
                matched = 1
            } else if byte == UInt8(ascii: "/"), matched > 0 {
                matched += 1
                if matched == 3 { return true }
            } else {
                matched = 0
            }
        }
        return false
    }

    /// What a character is to the rules, as bits.
    struct CharacterClass: OptionSet, Sendable {
        let rawValue: UInt8
        static let letterOrNumber = CharacterClass(rawValue: 1)
        static let whitespace = CharacterClass(rawValue: 2)
        static let hexDigit = CharacterClass(rawValue: 4)
        /// ASCII letters, digits and `+/-_`.
        static let base64 = CharacterClass(rawValue: 8)
        /// ``SecretShape/isSeparator(_:)``.
        static let separator = CharacterClass(rawValue: 16)

        init(rawValue: UInt8) { self.rawValue = rawValue }

        init(_ c: Character) {
            var bits: CharacterClass = []
            if c.isLetter || c.isNumber { bits.insert(.letterOrNumber) }
            if c.isWhitespace { bits.insert(.whitespace) }
            if c.isHexDigit { bits.insert(.hexDigit) }
            if SecretShape.isBase64(c) { bits.insert(.base64) }
            if SecretShape.isSeparator(c) { bits.insert(.separator) }
            self = bits
        }

        /// By byte, for the one-byte characters.
        static let ascii: [CharacterClass] = (0..<128).map { CharacterClass(Character(Unicode.Scalar(UInt8($0)))) }
        /// `\r\n`, one character.
        static let crlf = CharacterClass("\r\n")
    }

    /// The line's characters: `codes[k]` is the k-th character's byte when it is one ASCII
    /// byte (else `0x80`), `classes[k]` its class, `starts[k]` where it starts (`starts` has
    /// one more, the line's end).
    private struct CharacterScan {
        var codes: [UInt8] = []
        var classes: [CharacterClass] = []
        var starts: [String.Index] = []
        var count: Int { codes.count }

        init(_ line: String) {
            let utf8 = line.utf8
            let isASCII = utf8.allSatisfy { $0 < 0x80 }
            codes.reserveCapacity(utf8.count)
            classes.reserveCapacity(utf8.count)
            starts.reserveCapacity(utf8.count + 1)
            if isASCII {
                // Each byte is a character but `\r\n`, which is one.
                var i = utf8.startIndex
                while i < utf8.endIndex {
                    let byte = utf8[i]
                    let next = utf8.index(after: i)
                    starts.append(i)
                    if byte == 0x0D, next < utf8.endIndex, utf8[next] == 0x0A {
                        codes.append(0x80)
                        classes.append(CharacterClass.crlf)
                        i = utf8.index(after: next)
                    } else {
                        codes.append(byte)
                        classes.append(CharacterClass.ascii[Int(byte)])
                        i = next
                    }
                }
            } else {
                var i = line.startIndex
                while i < line.endIndex {
                    let c = line[i]
                    starts.append(i)
                    if c.utf8.count == 1, let byte = c.utf8.first {
                        codes.append(byte)
                        classes.append(CharacterClass.ascii[Int(byte)])
                    } else {
                        codes.append(0x80)
                        classes.append(CharacterClass(c))
                    }
                    i = line.index(after: i)
                }
            }
            starts.append(line.endIndex)
        }

        func has(_ bit: CharacterClass, _ k: Int) -> Bool { classes[k].contains(bit) }

        func matches(_ text: StaticString, at k: Int, lowercasing: Bool = false) -> Bool {
            let length = text.utf8CodeUnitCount
            guard k + length <= count else { return false }
            let pattern = UnsafeBufferPointer(start: text.utf8Start, count: length)
            for n in 0..<length {
                var code = codes[k + n]
                if lowercasing, code >= 0x41, code <= 0x5A { code += 0x20 }
                if code != pattern[n] { return false }
            }
            return true
        }

        /// `bctl_…`, `sbx.…` and `eyJ….….…`, each to the next space, quote or backtick.
        func tokens() -> [Range<Int>] {
            var ranges: [Range<Int>] = []
            var k = 0
            while k < count {
                if k == 0 || !has(.letterOrNumber, k - 1) {
                    let operatorToken = matches("bctl_", at: k, lowercasing: true)
                    let named = operatorToken || matches("sbx.", at: k, lowercasing: true)
                    if named || matches("eyJ", at: k) {
                        var end = k
                        while end < count, !has(.whitespace, end), !isQuote(codes[end]) { end += 1 }
                        let bare = named && end - k <= (operatorToken ? 5 : 4)
                        if !bare && (named || (k..<end).filter({ codes[$0] == UInt8(ascii: ".") }).count >= 2) {
                            ranges.append(k..<end)
                            k = end
                            continue
                        }
                    }
                }
                k += 1
            }
            return ranges
        }

        private func isQuote(_ code: UInt8) -> Bool {
            code == UInt8(ascii: "\"") || code == UInt8(ascii: "'") || code == UInt8(ascii: "`")
        }

        /// Runs of the base64 alphabets of exactly 43 characters (44 with one `=`).
        func base64Keys() -> [Range<Int>] {
            var ranges: [Range<Int>] = []
            var k = 0
            while k < count {
                guard has(.base64, k) else {
                    k += 1
                    continue
                }
                var j = k
                while j < count, has(.base64, j) { j += 1 }
                var end = j
                if end < count, codes[end] == UInt8(ascii: "=") { end += 1 }
                if j - k == 43 && (end == j || end - k == 44) { ranges.append(k..<end) }
                k = end
            }
            return ranges
        }

        /// Chains of hex words (each at most 64 digits) joined by separators; a UUID is no link.
        func hexKeys(halfKeys: Bool) -> [Range<Int>] {
            var words: [(range: Range<Int>, digits: Int?)] = []
            var ranges: [Range<Int>] = []
            var k = 0
            while k < count {
                if has(.separator, k) {
                    k += 1
                    continue
                }
                var j = k
                while j < count, !has(.separator, j) { j += 1 }
                let start = matches("0x", at: k) || matches("0X", at: k) ? min(k + 2, j) : k
                if start < j, j - start <= 64, (start..<j).allSatisfy({ has(.hexDigit, $0) }) {
                    words.append((k..<j, j - start))
                } else {
                    words.append((k..<j, nil))
                    ranges += exactRuns(k..<j, halfKeys: halfKeys)
                }
                k = j
            }
            var w = 0
            while w + 4 < words.count {
                if isUUID(words[w].range.lowerBound..<words[w + 4].range.upperBound) {
                    for n in w...(w + 4) { words[n].digits = nil }
                    w += 5
                } else {
                    w += 1
                }
            }
            var chain: [(range: Range<Int>, digits: Int)] = []
            func close() {
                defer { chain = [] }
                guard let first = chain.first, let last = chain.last else { return }
                let digits = chain.reduce(0) { $0 + $1.digits }
                let whole = digits >= 64 && (chain.count > 1 || digits == 64)
                if whole || (halfKeys && (32..<64).contains(digits)) {
                    ranges.append(first.range.lowerBound..<last.range.upperBound)
                }
            }
            for word in words {
                if let digits = word.digits { chain.append((word.range, digits)) } else { close() }
            }
            close()
            return ranges
        }

        /// Runs of exactly 64 hex digits (32 to 64 with `halfKeys`) inside a word not all hex.
        private func exactRuns(_ word: Range<Int>, halfKeys: Bool) -> [Range<Int>] {
            var out: [Range<Int>] = []
            var start: Int?
            for k in word.lowerBound...word.upperBound {
                if k < word.upperBound, has(.hexDigit, k) {
                    if start == nil { start = k }
                } else {
                    if let s = start, k - s == 64 || (halfKeys && (32...64).contains(k - s)) { out.append(s..<k) }
                    start = nil
                }
            }
            return out
        }

        /// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`: groups split at `-`, all hex.
        private func isUUID(_ range: Range<Int>) -> Bool {
            var lengths: [Int] = []
            var length = 0
            for k in range {
                if codes[k] == UInt8(ascii: "-") {
                    lengths.append(length)
                    length = 0
                } else {
                    guard has(.hexDigit, k) else { return false }
                    length += 1
                }
            }
            lengths.append(length)
            return lengths == [8, 4, 4, 4, 12]
        }
    }
}
