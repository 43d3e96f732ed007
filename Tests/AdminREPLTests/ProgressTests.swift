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
