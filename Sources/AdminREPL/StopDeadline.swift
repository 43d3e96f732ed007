import Foundation
import UnixSignals

/// The bound on how long `serve` and `worker` may take to stop once asked.
///
/// A graceful stop waits for requests and items in hand, and then for the store: a final
/// checkpoint, the pool's connections. A database that stopped answering would keep the process
/// alive for good (a request's read never returns, and postgres-nio does not cancel one in
/// flight), so a supervisor's stop hangs and a restart never comes. Once SIGTERM, SIGINT or
/// SIGHUP arrived, the process gets its drain time plus ``Interrupts/stuckSeconds``; past that it
/// ends with one line on stderr and 128 + the signal. Nothing is lost that a normal crash would
/// not lose: claimed cleanup items return after their lease, and the next start signs any audit
/// entries past the newest checkpoint (`audit.unsigned_tail`).
enum StopDeadline {
    /// The signals that stop `serve` and `worker` gracefully. SIGHUP (a closed terminal, a
    /// `systemctl reload` with no reload to do) stops them as SIGTERM does, not at once.
    static let signals: [UnixSignal] = [.sigterm, .sigint, .sighup]

    /// Watches for the first stop signal, then ends the process if it is still running
    /// `drainSeconds` + ``Interrupts/stuckSeconds`` later.
    static func arm(command: String, drainSeconds: Int) {
        let limit = drainSeconds + Interrupts.stuckSeconds
        Task.detached {
            var signals = await UnixSignalsSequence(trapping: signals).makeAsyncIterator()
            guard let signal = await signals.next() else { return }
            try? await Task.sleep(for: .seconds(limit))
            let line =
                "error[stop_timeout]: \(command) was asked to stop (\(signal)) and has not stopped within \(limit) s, waiting on something that does not answer (the database); ended without finishing. Requests in flight got no answer, claimed cleanup items return to the queue after their lease, and the next start signs audit entries past the newest checkpoint.\n"
            _ = Array(line.utf8).withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            _exit(128 + signal.rawValue)
        }
    }
}
