import BackupModel
import Synchronization

/// Why an argument type refused a value, for the executor to report.
///
/// `ExpressibleByArgument.init?(argument:)` can only say "invalid", and ArgumentParser then
/// reports a generic usage error. A type that knows better records its ``ConsoleError`` here
/// (code, one-line message, exit status); when the parse fails, ``Executor`` reports that.
enum ArgumentFailure {
    private static let last = Mutex<ConsoleError?>(nil)

    static func record(_ error: ConsoleError) { last.withLock { $0 = error } }

    /// The recorded refusal, forgotten as it is read.
    static func take() -> ConsoleError? {
        last.withLock { error in
            defer { error = nil }
            return error
        }
    }
}
