import Foundation

/// Long table output goes through `$PAGER` (default `less -FRX`) on a terminal.
@MainActor
enum Pager {
    static func show(_ text: String, ctx: CommandContext) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count
        guard ctx.interactive, Terminal.stdoutIsTerminal, lines > terminalHeight() - 2,
            ctx.environment["PAGER"] != ""
        else {
            Terminal.writeOut(text)
            return
        }
        let pager = ctx.environment["PAGER"] ?? "less -FRX"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", pager]
        process.environment = pagerEnvironment(ctx.environment)
        let pipe = Pipe()
        process.standardInput = pipe
        do {
            try process.run()
            pipe.fileHandleForWriting.write(Data((text + "\n").utf8))
            try pipe.fileHandleForWriting.close()
            process.waitUntilExit()
        } catch {
            Terminal.writeOut(text)
        }
    }

    /// The pager's environment: the console's, without its secrets (`BACKUPCTL_TOKEN` and any
    /// variable named like a token, key, secret or password).
    nonisolated static func pagerEnvironment(_ environment: [String: String]) -> [String: String] {
        environment.filter { name, _ in
            let upper = name.uppercased()
            return upper != "BACKUPCTL_TOKEN"
                && !["TOKEN", "SECRET", "PASSWORD", "PASSWD", "PRIVATE", "API_KEY", "ROOT_KEY", "CREDENTIAL"].contains {
                    upper.contains($0)
                }
        }
    }

    static func terminalHeight() -> Int {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0 { return Int(size.ws_row) }
        return 24
    }
}
