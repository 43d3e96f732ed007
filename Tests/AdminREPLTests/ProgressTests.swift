import Foundation
import Testing

@testable import AdminREPL

/// Issue 14 item 10: waiting is visible.
@Suite(.serialized) struct ProgressTests {
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
    func linesArePlainOffATerminalAndRedrawnOnOne(_ terminal: Bool) throws {
        let pipe = Pipe()
        let progress = Progress(label: "import", total: 10, terminal: terminal, output: pipe.fileHandleForWriting)
        progress.set(done: 3)
        progress.tick()
        progress.set(done: 7)
        progress.tick()
        progress.finish()
        try pipe.fileHandleForWriting.close()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
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

    @Test func aLongSeedOnATerminalShowsItsTotalAndETA() throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try cli.bootstrap()
        let pty = try PTY(arguments: [], environment: cli.environment.merging(["TERM": "xterm"]) { $1 })
        #expect(pty.expect("root@"))
        pty.send("seed --backups 400000\r")
        #expect(pty.expect("/400000 ("), "\(pty.transcript)")
        #expect(pty.expect("ETA"), "\(pty.transcript)")
        pty.send("\u{03}")
        #expect(pty.expect("error[interrupted]"), "\(pty.transcript)")
        pty.send("quit\r")
        #expect(pty.waitForExit())
    }
}
