import ArgumentParser
import Testing

@testable import AdminREPL

/// Seeded random script lines and word lists (fixed seeds, bounded iterations, well under a
/// second): the line splitter and the positional fast path never trap, and agree with their
/// specifications and with ArgumentParser on whatever they accept.
@Suite("Script-line fuzz")
struct ScriptLineFuzzTests {
    /// SplitMix64: a fixed seed gives the same cases on every run and machine.
    struct Stream {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
        mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
    }

    static let pieces: [String] = [
        "a", "b", "AQID", "-", "--", "--sync", "-h", "--help", "=", " ", "  ", "\t", "\"", "'", "\\", "#", "é",
        "\u{0}", "\u{1B}[2J", "\u{7}", "\u{2028}", "\u{202E}", "🙂", "backup_account_02", "google", "-5iG", "x=1",
        "\r", "\u{9B}",
    ]

    @Test("random lines: split never traps; quote-free lines split on blanks", arguments: [1, 2, 3] as [UInt64])
    func randomLines(seed: UInt64) {
        var rng = Stream(state: seed)
        var accepted = 0
        for _ in 0..<3000 {
            let line = (0..<rng.below(12)).map { _ in rng.pick(Self.pieces) }.joined()
            guard let words = try? LineSplitter.split(line) else {
                // Refused only for an open quote or a trailing backslash.
                #expect(line.contains("\"") || line.contains("'") || line.contains("\\"), "\(line.debugDescription)")
                continue
            }
            accepted += 1
            if !line.contains("\"") && !line.contains("'") && !line.contains("\\") {
                // A word that starts with `#` begins a comment: it and what follows are dropped.
                let expected = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
                    .prefix { !$0.hasPrefix("#") }.map { $0 }
                #expect(words == expected, "\(line.debugDescription)")
            }
            _ = LineSplitter.scriptLine(line)
        }
        #expect(accepted > 1000)
    }

    @Test("random plain lines take the byte fast path, and split on blanks", arguments: [8, 9] as [UInt64])
    func plainLines(seed: UInt64) throws {
        var rng = Stream(state: seed)
        let plain = Self.pieces.filter { piece in
            piece.utf8.allSatisfy { $0 < 0x80 && !"\\\"'#".utf8.contains($0) }
        }
        #expect(plain.count > 12)
        for _ in 0..<3000 {
            var line = (0..<rng.below(12)).map { _ in rng.pick(plain) }.joined()
            let words = line.withUTF8(LineSplitter.plainWords)
            #expect(words == line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init))
            #expect(try LineSplitter.split(line) == words)
            // One quote, backslash, `#` or non-ASCII byte anywhere sends the line to the walk.
            var marked = line + rng.pick(["\"", "'", "\\", "#", "é", "🙂"]) + rng.pick(plain)
            #expect(marked.withUTF8(LineSplitter.plainWords) == nil)
        }
    }

    @Test("random words survive single-quoting and splitting unchanged", arguments: [4, 5] as [UInt64])
    func quotedRoundTrip(seed: UInt64) async throws {
        var rng = Stream(state: seed)
        for _ in 0..<2000 {
            let words = (0..<(1 + rng.below(5))).map { _ in
                (0..<rng.below(6)).map { _ in rng.pick(Self.pieces) }.joined().replacingOccurrences(of: "'", with: "")
            }
            let line = words.map { "'\($0)'" }.joined(separator: rng.pick([" ", "\t", "  "]))
            #expect(try LineSplitter.split(line) == words, "\(line.debugDescription)")
        }
    }

    @Test("random words: the fast path agrees with ArgumentParser or steps aside", arguments: [6, 7] as [UInt64])
    func positional(seed: UInt64) async throws {
        var rng = Stream(state: seed)
        let commands = PositionalParseTests.commands
        var fast = 0
        for _ in 0..<400 {
            let words = (0..<rng.below(4)).map { _ in
                (0..<(1 + rng.below(3))).map { _ in rng.pick(Self.pieces) }.joined()
            }
            let command = rng.pick(commands)
            guard let parsed = command.parsePositional(words) else { continue }
            fast += 1
            let options = words.filter { !LookupCommand.Passkey.isValue($0) }
            let values = words.filter(LookupCommand.Passkey.isValue)
            // A value with a leading dash is read by ArgumentParser only after `--` (without it,
            // `-5iG-h` is a group of short flags holding -h); the fast path reads it directly.
            let dashed = values.contains { $0.hasPrefix("-") }
            let full = try #require(
                dashed
                    ? try? command.parseAsRoot(options + ["--"] + values)
                    : (try? command.parseAsRoot(words)) ?? (try? command.parseAsRoot(options + ["--"] + values)),
                "ArgumentParser refuses \(words) for \(command)")
            #expect(String(describing: parsed) == String(describing: full), "\(command) \(words)")
        }
        #expect(fast > 50)
    }
}
