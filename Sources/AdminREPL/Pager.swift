import BackupModel
import CReadline
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Long table output goes through a pager on a terminal: `$BACKUPCTL_PAGER`, else `$PAGER`, else
/// `less -FRXK`; an empty value or `--no-pager` (`set pager off`) prints directly.
///
/// The pager runs in a process group of its own that is made the terminal's foreground group
/// for as long as it runs, so it can read keys (`q`, Ctrl-C) and receives the terminal's
/// signals instead of the console. A process started in the background group (what
/// Foundation's `Process` does) stops on its first read from the terminal, or under some
/// parents gets EIO and quits after the first screen — the frozen session and the silently
/// cut output of issue 14. Afterwards the console takes the terminal back and restores the
/// terminal modes readline expects.
@MainActor
enum Pager {
    static let defaultCommand = "less -FRXK"

    /// The pager command line, or `nil` when paging is off.
    static func command(settings: GlobalSettings, environment: [String: String]) -> String? {
        if settings.noPager { return nil }
        let chosen = environment["BACKUPCTL_PAGER"] ?? environment["PAGER"] ?? defaultCommand
        let trimmed = chosen.trimmingCharacters(in: .whitespaces)
        return trimmed.isEmpty ? nil : trimmed
    }

    /// The environment the pager runs with: the console's, without any `BACKUPCTL_*` variable
    /// (`BACKUPCTL_TOKEN` holds an operator token; the pager has no business with any of them)
    /// and without anything ``SecretShape/isSecret(variable:value:)`` finds: variables named like
    /// a token, key, secret, password, cookie or PAT, URLs with credentials, secret-shaped values.
    nonisolated static func environment(from environment: [String: String]) -> [String: String] {
        environment.filter { !SecretShape.isSecret(variable: $0.key, value: $0.value) }
    }

    /// The same scrub, under the name the hardening tests use.
    nonisolated static func pagerEnvironment(_ environment: [String: String]) -> [String: String] {
        Self.environment(from: environment)
    }

    static func show(_ text: String, ctx: CommandContext) {
        let text = SafeText.unmarked(text)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count
        guard ctx.interactive, Terminal.stdoutIsTerminal, lines > terminalHeight() - 2,
            let command = command(settings: ctx.settings, environment: ctx.environment),
            tcgetpgrp(STDOUT_FILENO) == getpgrp()
        else {
            Terminal.writeOut(text)
            return
        }
        switch run(command, text: text + "\n", environment: environment(from: ctx.environment)) {
        case .shown:
            break
        case .notStarted:
            // Nothing was shown: the output comes in full, and the operator learns why.
            Terminal.writeErr("note: the pager `\(command)` could not start; printing directly (--no-pager).")
            Terminal.writeOut(text)
        case .killed(let signal):
            Terminal.writeErr(
                "note: the pager `\(command)` ended on signal \(signal); the output may be incomplete "
                    + "(rerun with --no-pager to print it all).")
        }
    }

    enum Outcome {
        case shown
        case notStarted
        case killed(Int32)
    }

    /// Runs `command` under `/bin/sh` as the terminal's foreground process group, feeding it
    /// `text` on its stdin, and waits for it.
    static func run(_ command: String, text: String, environment: [String: String]) -> Outcome {
        let tty = STDOUT_FILENO
        var saved = termios()
        let haveModes = tcgetattr(tty, &saved) == 0
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return .notStarted }
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, ends[0], STDIN_FILENO)
        // Nothing but stdin, stdout and stderr: not the console's sockets (a live connection to
        // the server), its store or its signal pipe.
        backupctl_spawn_close_from(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE, SIGCHLD] { sigaddset(&defaults, signal) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(command), nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, envp)
        close(ends[0])
        guard spawned == 0 else {
            close(ends[1])
            return .notStarted
        }
        _ = setpgid(pid, pid)
        // tcsetpgrp from a group that is about to be in the background raises SIGTTOU: ignore
        // it while the terminal changes hands, both ways.
        let oldTTOU = signal(SIGTTOU, SIG_IGN)
        let oldPIPE = signal(SIGPIPE, SIG_IGN)
        _ = tcsetpgrp(tty, pid)
        defer {
            _ = tcsetpgrp(tty, getpgrp())
            if haveModes { _ = tcsetattr(tty, TCSADRAIN, &saved) }
            signal(SIGTTOU, oldTTOU)
            signal(SIGPIPE, oldPIPE)
        }

        // The pager reads lazily: write from another thread so this one can watch the pager
        // (a write blocks until the pager asks for more, and fails once it has quit).
        let writeEnd = ends[1]
        let bytes = Array(text.utf8)
        let written = DispatchSemaphore(value: 0)
        let writer = Thread {
            defer { written.signal() }
            bytes.withUnsafeBytes { raw in
                guard let base = raw.baseAddress else { return }
                var offset = 0
                while offset < raw.count {
                    let n = write(writeEnd, base + offset, raw.count - offset)
                    if n < 0, errno == EINTR { continue }
                    if n <= 0 { break }
                    offset += n
                }
            }
            close(writeEnd)
        }
        writer.start()

        var status: Int32 = 0
        while true {
            // Its end is seen before it is reaped: while the shell is a zombie its process group
            // id is still its own, so the group can be ended below without reaching a stranger.
            var info = siginfo_t()
            if waitid(P_PID, id_t(pid), &info, WEXITED | WSTOPPED | WNOWAIT) < 0 {
                if errno == EINTR { continue }
                break
            }
            if info.si_code != CLD_STOPPED {
                // The shell is gone; what it started must go too. A shell killed by Ctrl-\ left
                // the pager running in its own group, holding the pipe (so the write below never
                // ended) and then reading the console's next keys.
                kill(-pid, SIGTERM)
                kill(-pid, SIGCONT)
            }
            let waited = waitpid(pid, &status, WUNTRACED)
            if waited < 0 {
                if errno == EINTR { continue }
                break
            }
            if Self.stopped(status) {
                let stop = (status >> 8) & 0xff
                if stop == SIGTTOU || stop == SIGTTIN {
                    // It touched the terminal before it was handed over: it has it now.
                    _ = tcsetpgrp(tty, pid)
                    kill(-pid, SIGCONT)
                } else {
                    // Ctrl-Z in the pager: there is no job to suspend it into from inside the
                    // console, so close it and return to the prompt.
                    kill(-pid, SIGTERM)
                    kill(-pid, SIGCONT)
                }
                continue
            }
            break
        }
        awaitGroupEnd(pid)
        // Once the pager is gone its writes fail at once (EPIPE): wait for them, while SIGPIPE
        // is still ignored.
        written.wait()
        if Self.exited(status) {
            // sh answers 126/127 when the command cannot run: nothing was shown.
            let code = (status >> 8) & 0xff
            return code == 126 || code == 127 ? .notStarted : .shown
        }
        let signal = status & 0x7f
        return signal == SIGTERM || signal == SIGINT ? .shown : .killed(signal)
    }

    /// Waits until nothing is left of the pager's process group, to take the terminal back.
    /// The shell can be gone while the pager it started is still on its way out (ended by the
    /// SIGTERM above, or by Ctrl-C, still restoring the terminal): a prompt shown then shares
    /// the terminal with it, and the first key typed at the prompt can go to the pager. A
    /// group still there after ``groupGrace`` (something that ignores SIGTERM) is killed.
    static func awaitGroupEnd(_ group: pid_t) {
        let start = DispatchTime.now().uptimeNanoseconds
        var killed = false
        while kill(-group, 0) == 0 {
            // Reaps what the console itself must reap (when it is the reaper of orphans, PID 1
            // in a container); a zombie stays in the group until it is reaped.
            while waitpid(-group, nil, WNOHANG) > 0 {}
            let elapsed = DispatchTime.now().uptimeNanoseconds - start
            if !killed, elapsed >= groupGrace {
                kill(-group, SIGKILL)
                killed = true
            } else if elapsed >= 2 * groupGrace {
                return
            }
            usleep(1_000)
        }
    }

    /// How long a pager's group may take to end after its shell did.
    static let groupGrace: UInt64 = 5_000_000_000

    private static func stopped(_ status: Int32) -> Bool { status & 0xff == 0x7f }
    private static func exited(_ status: Int32) -> Bool { status & 0x7f == 0 }

    static func terminalHeight() -> Int {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0 { return Int(size.ws_row) }
        return 24
    }
}
