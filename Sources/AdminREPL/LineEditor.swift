@preconcurrency import CReadline
import Foundation

/// GNU readline, used only when stdin is a terminal (when it is not, readline would echo the
/// prompt and the line to stdout; the batch path reads plain lines instead).
///
/// Ctrl-C while editing abandons the line. The SIGINT handler writes to a self-pipe (the
/// signal may land on any thread), and readline reads keys through ``getKey`` which polls
/// stdin and that pipe: on a signal it clears the line and hands readline a newline, so
/// `readline()` returns an empty line and the REPL prompts again.
enum LineEditor {
    /// Words Tab may complete at the cursor, given the words before it.
    nonisolated(unsafe) static var completer: ((_ before: [String], _ prefix: String) -> [String])?
    nonisolated(unsafe) fileprivate static var matches: [String] = []

    static func setUp() {
        backupctl_rl_set_name(strdup("backupctl"))
        backupctl_rl_set_completion(completionHook)
        backupctl_rl_set_catch_signals(0)
        backupctl_rl_set_getc(getKey)
        SignalFlag.install()
    }

    /// One line, or `nil` at end of input (Ctrl-D).
    static func readLine(prompt: String) -> String? {
        SignalFlag.drain()
        guard let raw = readline(prompt) else { return nil }
        defer { free(raw) }
        return String(cString: raw)
    }

    static func addHistory(_ line: String) {
        add_history(line)
    }
}

private let getKey: @convention(c) (UnsafeMutablePointer<FILE>?) -> Int32 = { _ in
    var fds = [
        pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0),
        pollfd(fd: SignalFlag.pipeReadEnd, events: Int16(POLLIN), revents: 0),
    ]
    while true {
        let ready = poll(&fds, 2, -1)
        if ready < 0 {
            if errno == EINTR { continue }
            return EOF
        }
        if fds[1].revents & Int16(POLLIN) != 0 {
            SignalFlag.drain()
            rl_replace_line("", 0)
            FileHandle.standardOutput.write(Data("^C".utf8))
            return 10  // newline: accept the now-empty line
        }
        if fds[0].revents & Int16(POLLIN | POLLHUP) != 0 {
            var byte: UInt8 = 0
            let n = read(STDIN_FILENO, &byte, 1)
            if n == 1 { return Int32(byte) }
            if n < 0, errno == EINTR { continue }
            return EOF
        }
    }
}

private let completionHook:
    @convention(c) (UnsafePointer<CChar>?, Int32, Int32) -> UnsafeMutablePointer<
        UnsafeMutablePointer<CChar>?
    >? = { text, start, _ in
        backupctl_rl_set_attempted_over(1)
        let prefix = text.map { String(cString: $0) } ?? ""
        let buffer = backupctl_rl_line_buffer().map { String(cString: $0) } ?? ""
        let before = String(decoding: buffer.utf8.prefix(Int(start)), as: UTF8.self)
        let words = before.split(separator: " ").map(String.init)
        LineEditor.matches = LineEditor.completer?(words, prefix) ?? []
        guard let text else { return nil }
        return rl_completion_matches(text, completionGenerator)
    }

private let completionGenerator: @convention(c) (UnsafePointer<CChar>?, Int32) -> UnsafeMutablePointer<CChar>? = {
    _, state in
    let index = Int(state)
    guard index < LineEditor.matches.count else { return nil }
    return strdup(LineEditor.matches[index])
}

/// SIGINT as a flag plus a self-pipe, for readline's key reader and for cancelling a
/// running command. The handler only does async-signal-safe things (store, write).
enum SignalFlag {
    nonisolated(unsafe) private static var raised: sig_atomic_t = 0
    nonisolated(unsafe) private static var pipeEnds: [Int32] = [-1, -1]

    static var pipeReadEnd: Int32 { pipeEnds[0] }

    static func install() {
        guard pipeEnds[0] < 0 else { return }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return }
        for fd in ends {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            // A child (the pager) must not hold the console's signal pipe.
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        pipeEnds = ends
        handle(SIGINT)
    }

    /// Routes `signal` to ``Interrupts/handler`` (which raises this flag). A parent may hand
    /// the signal down blocked (a test runner's thread does): it is unblocked, or Ctrl-C would
    /// never reach the handler.
    static func handle(_ signal: Int32) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = Interrupts.handler
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        sigaction(signal, &action, nil)
        var unblock = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, signal)
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    }

    /// Every Ctrl-C so far (never drained): the REPL counts presses while a command runs.
    nonisolated(unsafe) private(set) static var presses: sig_atomic_t = 0

    static func raise() {
        raised = 1
        presses &+= 1
        var byte: UInt8 = 1
        _ = write(pipeEnds[1], &byte, 1)
    }

    static var isRaised: Bool { raised != 0 }

    /// Forgets an earlier Ctrl-C (before a new prompt).
    static func drain() {
        raised = 0
        var buffer = [UInt8](repeating: 0, count: 64)
        while pipeEnds[0] >= 0, read(pipeEnds[0], &buffer, buffer.count) > 0 {}
    }
}
