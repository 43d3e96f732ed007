import Foundation
import Testing

@testable import AdminREPL

/// Issue 14 item 10: waiting is visible.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ProgressTests {
    @Test func theLineShowsCountTotalRateAndETA() {
        let line = Progress.line(label: "seed", done: 250, total: 1000, detail: nil, elapsed: 5, final: false)
        #expect(line == "seed: 250/1000 (25%), 50/s, ETA 15s, 5s")
        let done = Progress.line(label: "seed", done: 1000, total: 1000, detail: nil, elapsed: 20, final: true)
        #expect(done == "seed: 1000/1000 (100%), 50/s, in 20s")
        let open = Progress.line(label: "check", done: 800, total: nil, detail: nil, elapsed: 2, final: false)
        #expect(open == "check: 800 done, 400/s, 2s")
        let waiting = Progress.line(
            label: "cleanup scan", done: nil, total: nil, detail: nil, elapsed: 75, final: false)
        #expect(waiting == "cleanup scan: waiting, 1m15s")
        let detail = Progress.line(
            label: "cleanup run", done: 3, total: 4, detail: "3 deleted", elapsed: 3, final: false)
        #expect(detail == "cleanup run: 3/4 (75%), 1/s, ETA 1s, 3 deleted, 3s")
    }

    /// Not a terminal: whole lines, each a fresh state, never carriage-return redraws; on a
    /// terminal: one line redrawn in place, closed by a newline.
    @Test(arguments: [false, true])
    func linesArePlainOffATerminalAndRedrawnOnOne(_ terminal: Bool) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("progress-\(UUID().uuidString)")
        #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
        defer { try? FileManager.default.removeItem(at: file) }
        let output = try FileHandle(forWritingTo: file)
        let progress = Progress(label: "import", total: 10, terminal: terminal, output: output)
        progress.set(done: 3)
        progress.tick()
        progress.set(done: 7)
        progress.tick()
        progress.finish()
        try output.close()
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.contains("import: 3/10 (30%)") && text.contains("import: 7/10 (70%)"))
        #expect(text.contains("in "), "a closing line: \(text)")
        if terminal {
            #expect(text.contains("\r\u{1B}[K") && text.hasSuffix("\n"))
            #expect(text.filter { $0 == "\n" }.count == 1, "one line, redrawn: \(text.debugDescription)")
        } else {
            #expect(!text.contains("\r") && !text.contains("\u{1B}"))
            let lines = text.split(separator: "\n")
            #expect(lines.count >= 3 && lines.allSatisfy { $0.hasPrefix("import: ") }, "\(text)")
        }
    }

    @Test func aLongSeedOnATerminalShowsItsTotalAndETA() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let pty = try PTY(arguments: [], environment: cli.environment.merging(["TERM": "xterm"]) { $1 })
        #expect(await pty.expect("root@"))
        pty.send("seed --backups 400000\r")
        #expect(await pty.expect("/400000 ("), "\(pty.transcript)")
        #expect(await pty.expect("ETA"), "\(pty.transcript)")
        pty.send("\u{03}")
        #expect(await pty.expect("error[interrupted]"), "\(pty.transcript)")
        pty.send("quit\r")
        #expect(await pty.waitForExit())
    }
}
