import BackupModel
import Foundation
import Synchronization

/// How far a job got when a signal stopped it: the `"interrupted": true` line's numbers.
struct JobInterruption: Sendable {
    var label: String
    var done: Int
    var total: Int?
    /// SIGINT or SIGTERM outside the REPL; `nil` for Ctrl-C in the REPL.
    var signal: Int32?

    /// What is left, when the total is known.
    var left: Int? { total.map { max(0, $0 - done) } }

    /// The command's failure: the job stopped early, whatever it had finished is kept.
    var error: ConsoleError {
        let of = total.map { " of \($0)" } ?? ""
        let by = signal.map { " by \(Interrupts.name($0))" } ?? ""
        return ConsoleError(
            .conflict, code: "interrupted",
            "\(label) was interrupted\(by) after \(done)\(of); what was done is kept and a rerun continues from it.")
    }

    /// The fields added to the command's JSON line.
    struct Fields: Encodable {
        var interrupted = true
        var done: Int
        var total: Int?
        var left: Int?
    }

    var fields: Fields { Fields(done: done, total: total, left: left) }

    /// `document`'s JSON object with ``fields`` added (what was done, what is left).
    func merged(into document: any Encodable) -> JSONValue {
        let encoder = JSONEncoder()
        guard let data = try? encoder.encode(AnyEncodable(document)),
            case .object(var object)? = try? JSONDecoder().decode(JSONValue.self, from: data),
            let extra = try? encoder.encode(fields),
            case .object(let added)? = try? JSONDecoder().decode(JSONValue.self, from: extra)
        else { return .object([:]) }
        for (key, value) in added { object[key] = value }
        return .object(object)
    }
}

/// `BACKUPCTL_PAUSE_AT=job.progress` (debug builds): a job's first progress report writes
/// `{"paused":"job.progress"}` on stderr and holds the job until a signal arrives, so a test
/// interrupts it at exactly that point (never "after N ms"). Release builds ignore it.
final class JobCheckpoint: Sendable {
    private let first: Mutex<Bool>?

    init(environment: [String: String]) {
        #if DEBUG
            first = environment["BACKUPCTL_PAUSE_AT"] == "job.progress" ? Mutex(true) : nil
        #else
            first = nil
        #endif
    }

    func reached() {
        let isFirst = first?.withLock { first in
            defer { first = false }
            return first
        }
        guard isFirst == true else { return }
        Terminal.writeErr(#"{"paused":"job.progress"}"#)
        // Bounded: a test that never signals does not hang the job for good.
        for _ in 0..<6000 where !SignalFlag.isRaised { usleep(10_000) }
    }
}
