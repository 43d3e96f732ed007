import Foundation

/// SIGINT and SIGTERM outside the REPL: what a batch, a direct command or a script learns
/// when it is interrupted, and how it ends.
///
/// A job (import, seed, check, cleanup run) stops after the call it is in, writes its one
/// output line (`"interrupted": true`, what was done, what is left), and the run ends with
/// 128 + the signal (130 for SIGINT, 143 for SIGTERM) — never 0, and never going on to the
/// next command, even with `--continue-on-error`. A signal that arrives while nothing is
/// running (between commands, while reading the next line of stdin) ends the process at once
/// with the same status: nothing is in flight then.
enum Interrupts {
    /// The last SIGINT or SIGTERM received (0: none). Written by the handler only.
    nonisolated(unsafe) private static var received: sig_atomic_t = 0
    /// How many commands that must be let finish are running (a batch command, the job inside
    /// it); while any is, a signal raises ``SignalFlag`` instead of ending the process.
    nonisolated(unsafe) private static var letFinish: sig_atomic_t = 0
    /// Whether the whole run holds the handlers (not the REPL, where Ctrl-C only cancels).
    nonisolated(unsafe) private(set) static var heldForRun = false
    /// How many signals a command took as its normal end (``consume()``): a grace period that
    /// began before one does not end the process.
    nonisolated(unsafe) private static var consumed: sig_atomic_t = 0
    /// The run's one watchdog (``watch()``), started by the first command let finish.
    @MainActor private static var watchdog: Task<Void, Never>?

    /// The one handler of both signals: async-signal-safe (stores, `write`, `_exit`).
    static let handler: @convention(c) (Int32) -> Void = { signal in
        Interrupts.received = signal
        if Interrupts.heldForRun, Interrupts.letFinish == 0 { _exit(128 + signal) }
        SignalFlag.raise()
    }

    /// Takes SIGINT and SIGTERM for the whole run of a batch or a direct command.
    static func holdForRun() {
        heldForRun = true
        SignalFlag.install()
        SignalFlag.handle(SIGTERM)
    }

    /// Hands Ctrl-C back to the REPL (which cancels a command and goes on) after a direct command.
    static func releaseForREPL() { heldForRun = false }

    /// Runs `body` with signals turned into the flag: the command in it is let finish.
    /// Once a signal arrived, ends a command that is let finish but does not stop within
    /// ``stuckSeconds`` (``watch()``).
    ///
    /// One watchdog serves the whole run (a script's lines would otherwise each start and
    /// cancel a task of their own, a tenth of a long script's time). It acts only while a
    /// command is let finish and the run holds the signals: in the REPL, Ctrl-C cancels the
    /// command and the session goes on, and a Ctrl-C at the prompt long before must never end
    /// a later command.
    @MainActor
    static func finishing<T>(_ body: () async -> T) async -> T {
        if heldForRun, watchdog == nil { watchdog = Task.detached { await Self.watch() } }
        letFinish += 1
        defer { letFinish -= 1 }
        return await body()
    }

    /// How long a command may go on after SIGINT or SIGTERM: a job stops after the call it is
    /// in, but a call can hang (a server or a database that stopped answering).
    /// `BACKUPCTL_STOP_GRACE_SECONDS` (1…3600) sets it; 60 by default, past any call that is
    /// merely slow.
    static let stuckSeconds: Int = {
        let given = ProcessInfo.processInfo.environment["BACKUPCTL_STOP_GRACE_SECONDS"].flatMap { Int($0) }
        return given.map { min(max($0, 1), 3600) } ?? 60
    }()

    /// Waits for a signal while a command is let finish, then ``stuckSeconds`` at a time: a
    /// command that used almost no CPU in that time is waiting on a peer that does not answer,
    /// and is ended, with one line saying its outcome is unknown, and 128 + the signal. One
    /// still computing (a long call of this process's own, on a loaded machine) is let finish.
    /// The grace ends nothing once no command is let finish, the run handed the signals back
    /// (a REPL after a direct command), or a command took the signal as its end; it waits for
    /// the next one then.
    static func watch() async {
        while !Task.isCancelled {
            if let signal = Interrupts.signal, letFinish > 0, heldForRun {
                let consumedBefore = consumed
                var before = (cpu: cpuSeconds(), stall: cpuStallSeconds())
                // Bounded: a machine busy for five grace periods in a row does not keep it alive.
                for contended in 0..<5 {
                    do { try await Task.sleep(for: .seconds(stuckSeconds)) } catch { return }
                    let now = (cpu: cpuSeconds(), stall: cpuStallSeconds())
                    let window = Double(stuckSeconds)
                    defer { before = now }
                    if now.cpu - before.cpu >= window * 0.05 { continue }
                    // Little CPU while others waited for it (Linux's pressure stall information)
                    // may be a command starved on a busy machine, not one waiting on a peer.
                    if let stall = now.stall, let was = before.stall, stall - was >= window * 0.2, contended < 4 {
                        continue
                    }
                    break
                }
                guard Interrupts.signal != nil, consumed == consumedBefore, letFinish > 0, heldForRun else { continue }
                let line =
                    "error[interrupted]: \(name(signal)) arrived and the command has not stopped within \(stuckSeconds) s, waiting on something that does not answer (a server, a database); ended without its answer, so its outcome is unknown.\n"
                _ = Array(line.utf8).withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
                _exit(128 + signal)
            }
            do { try await Task.sleep(for: .milliseconds(100)) } catch { return }
        }
    }

    /// How long, in all, some task on this machine waited for a CPU (`/proc/pressure/cpu`'s
    /// `some total`), seconds; `nil` where the kernel does not say.
    static func cpuStallSeconds() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/pressure/cpu", encoding: .utf8),
            let some = text.split(separator: "\n").first(where: { $0.hasPrefix("some ") }),
            let total = some.split(separator: " ").first(where: { $0.hasPrefix("total=") }),
            let micros = Double(total.dropFirst("total=".count))
        else { return nil }
        return micros / 1_000_000
    }

    /// The CPU time this process has used so far (user and system), seconds.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1_000_000
        let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1_000_000
        return user + system
    }

    /// The signal received since the run began, if any.
    static var signal: Int32? { received == 0 ? nil : received }

    /// The exit status of a run that was interrupted: 128 + the signal.
    static var exitStatus: Int32? { signal.map { 128 + $0 } }

    /// Forgets a signal the command took as its normal end (`audit list --follow` ends on Ctrl-C).
    static func consume() {
        received = 0
        consumed &+= 1
    }

    /// The signal's name for messages.
    static func name(_ signal: Int32) -> String { signal == SIGTERM ? "SIGTERM" : "SIGINT" }
}
