import Foundation

/// A runbook parsed for its drill: every fenced block with the `<!-- drill: … -->` annotation
/// written on the line(s) just above it.
///
/// The convention (also documented in `runbooks/README.md`):
///
/// - Every fenced block carries an annotation as the last non-blank line before its opening fence.
/// - `sh` blocks hold commands on lines starting `$ ` (a trailing `\` continues the command on the
///   next line); the lines after a command, up to the next `$ `, are output it must print, in order,
///   each matching one whole line of its stdout or stderr. `…` matches any text; a line of `…`
///   alone marks output left out.
/// - Keys: `exit=N` (every command of the block exits N; default 0), `skip reason="…"` (not run;
///   the reason is required), `file=PATH [mode=600]` (the block's text is written to PATH),
///   `capture=NAME:json.path` or `capture=NAME:/regex/` (from the block's last command: a field of
///   its JSON output, or the first group of a regex over its output; a later visible
///   `$ export NAME=…` line shows the operator the value, `…` standing for what varies),
///   `requires=TOOL` (run only
///   when TOOL is installed), `timeout=SECONDS` (per command, default 60).
struct DrillRunbook {
    struct Annotation: Equatable {
        var exit: Int32 = 0
        var skipReason: String?
        var isSkip = false
        var file: String?
        var mode: String?
        var captures: [Capture] = []
        var requires: [String] = []
        var timeout: TimeInterval = 60
    }

    struct Capture: Equatable {
        var name: String
        var source: Source
        enum Source: Equatable {
            case json(String)
            case regex(String)
        }
    }

    struct Command: Equatable {
        var line: Int
        var text: String
        var expected: [String]
    }

    struct Block {
        var line: Int
        var info: String
        var body: [String]
        var annotation: Annotation?
        var annotationError: String?

        /// The `$ ` commands of an `sh` block with the output lines that follow each.
        var commands: [Command] {
            var result: [Command] = []
            var index = 0
            while index < body.count {
                let raw = body[index]
                if raw.hasPrefix("$ ") {
                    var text = String(raw.dropFirst(2))
                    let start = line + 1 + index
                    while text.hasSuffix("\\"), index + 1 < body.count {
                        index += 1
                        text = String(text.dropLast()) + " " + body[index].trimmingCharacters(in: .whitespaces)
                    }
                    result.append(Command(line: start, text: text.trimmingCharacters(in: .whitespaces), expected: []))
                } else if !result.isEmpty {
                    result[result.count - 1].expected.append(raw)
                }
                index += 1
            }
            return result
        }

        var mentionsBackupctl: Bool { body.contains { $0.contains("backupctl") } }
    }

    let name: String
    let blocks: [Block]

    init(name: String, text: String) {
        self.name = name
        let lines = text.components(separatedBy: "\n")
        var blocks: [Block] = []
        var index = 0
        while index < lines.count {
            let line = lines[index]
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("```") else {
                index += 1
                continue
            }
            let fence = String(trimmed.prefix { $0 == "`" })
            let info = String(trimmed.dropFirst(fence.count)).trimmingCharacters(in: .whitespaces)
            // The annotation: the last non-blank lines above the fence, joined if it spans lines.
            var above = index - 1
            while above >= 0, lines[above].trimmingCharacters(in: .whitespaces).isEmpty { above -= 1 }
            var annotationText: String?
            if above >= 0, lines[above].trimmingCharacters(in: .whitespaces).hasSuffix("-->") {
                var start = above
                while start > 0, !lines[start].contains("<!--") { start -= 1 }
                let joined = lines[start...above].joined(separator: " ")
                if let open = joined.range(of: "<!--"),
                    joined[open.upperBound...].trimmingCharacters(in: .whitespaces).hasPrefix("drill:")
                {
                    annotationText = joined
                }
            }
            var body: [String] = []
            index += 1
            while index < lines.count, !lines[index].trimmingCharacters(in: .whitespaces).hasPrefix(fence) {
                body.append(lines[index])
                index += 1
            }
            index += 1
            var block = Block(line: index - body.count - 1, info: info, body: body, annotation: nil)
            if let annotationText {
                do { block.annotation = try Self.parseAnnotation(annotationText) } catch {
                    block.annotationError = "\(error)"
                }
            }
            blocks.append(block)
        }
        self.blocks = blocks
    }

    struct ParseError: Error, CustomStringConvertible {
        var description: String
    }

    /// `<!-- drill: key=value key="quoted value" flag -->` → ``Annotation``.
    static func parseAnnotation(_ text: String) throws -> Annotation {
        guard let open = text.range(of: "drill:"), let close = text.range(of: "-->", options: .backwards) else {
            throw ParseError(description: "not a drill annotation")
        }
        let inner = text[open.upperBound..<close.lowerBound]
        var tokens: [(String, String?)] = []
        var scanner = inner.makeIterator()
        var key = ""
        var value: String?
        var inValue = false
        var quoted = false
        func flush() {
            if !key.isEmpty { tokens.append((key, value)) }
            key = ""
            value = nil
            inValue = false
            quoted = false
        }
        while let c = scanner.next() {
            if quoted {
                if c == "\"" { quoted = false } else { value!.append(c) }
            } else if c == " " || c == "\t" {
                flush()
            } else if !inValue && c == "=" {
                inValue = true
                value = ""
            } else if inValue && c == "\"" && value == "" {
                quoted = true
            } else if inValue {
                value!.append(c)
            } else {
                key.append(c)
            }
        }
        guard !quoted else { throw ParseError(description: "unterminated quote in \(text)") }
        flush()
        var annotation = Annotation()
        for (key, value) in tokens {
            switch key {
            case "exit":
                guard let value, let code = Int32(value) else { throw ParseError(description: "exit needs a number") }
                annotation.exit = code
            case "skip": annotation.isSkip = true
            case "reason": annotation.skipReason = value
            case "file": annotation.file = value
            case "mode": annotation.mode = value
            case "requires": annotation.requires.append(value ?? "")
            case "timeout":
                guard let value, let seconds = TimeInterval(value) else {
                    throw ParseError(description: "timeout needs seconds")
                }
                annotation.timeout = seconds
            case "capture":
                guard let value, let colon = value.firstIndex(of: ":") else {
                    throw ParseError(description: "capture needs NAME:json.path or NAME:/regex/")
                }
                let name = String(value[..<colon])
                let source = String(value[value.index(after: colon)...])
                if source.hasPrefix("/") && source.hasSuffix("/") && source.count > 2 {
                    annotation.captures.append(
                        Capture(name: name, source: .regex(String(source.dropFirst().dropLast()))))
                } else {
                    annotation.captures.append(Capture(name: name, source: .json(source)))
                }
            default:
                throw ParseError(description: "unknown drill key \(key)")
            }
        }
        return annotation
    }

    /// Problems that make the runbook undrillable: a block without an annotation, a skip without
    /// a reason, an `sh` block whose lines are not commands, an unknown key.
    var lintProblems: [String] {
        var problems: [String] = []
        for block in blocks {
            let place = "\(name):\(block.line)"
            if let error = block.annotationError {
                problems.append("\(place): bad drill annotation: \(error)")
                continue
            }
            guard let annotation = block.annotation else {
                problems.append("\(place): fenced block without a <!-- drill: … --> annotation")
                continue
            }
            if annotation.isSkip {
                if (annotation.skipReason ?? "").trimmingCharacters(in: .whitespaces).isEmpty {
                    problems.append("\(place): drill: skip needs reason=\"…\"")
                }
                continue
            }
            if annotation.skipReason != nil { problems.append("\(place): reason= without skip") }
            if annotation.file != nil { continue }
            if block.info != "sh" {
                problems.append("\(place): only sh blocks run; mark this \(block.info) block file=… or skip")
            } else if block.commands.isEmpty {
                problems.append("\(place): sh block without a `$ ` command")
            } else if let first = block.body.first(where: { !$0.isEmpty }), !first.hasPrefix("$ ") {
                problems.append("\(place): sh block must start with a `$ ` command")
            }
            for capture in annotation.captures where !showsAssignment(of: capture.name, after: block.line) {
                problems.append(
                    "\(place): capture \(capture.name) is not shown: add a later `$ export \(capture.name)=…` line")
            }
        }
        return problems
    }

    /// Whether a block after `line` shows the captured value as a visible `export NAME=…` line
    /// (what an operator types; the drill checks the captured value matches it).
    func showsAssignment(of name: String, after line: Int) -> Bool {
        blocks.contains { block in
            block.line > line && block.commands.contains { $0.text.hasPrefix("export \(name)=") }
        }
    }
}
