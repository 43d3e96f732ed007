/// The one error type every layer of the console throws.
///
/// A public struct over a small set of kinds, so cases can be added without breaking callers.
/// `code` is the stable snake_case name scripts see in `{"error": {"code", "message"}}`;
/// `message` is one operator-facing sentence that never carries a secret. The mapping from
/// ``Kind`` to a process exit code lives in one place, in the executable.
public struct ConsoleError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, at the granularity that decides the exit code.
    public enum Kind: String, Sendable, Equatable {
        /// The input was malformed or violated a rule (exit 1).
        case invalidInput
        /// The thing asked for does not exist (exit 1).
        case notFound
        /// A proof or signature did not verify, or a token was stale (exit 1).
        case verificationFailed
        /// The request conflicts with the current state (exit 1).
        case conflict
        /// A remote system (Turnkey, the backup service) failed (exit 2).
        case remote
        /// The command line itself was wrong (exit 64).
        case usage
        /// The operator lacks the role for this tenant (exit 77).
        case permissionDenied
        /// A local failure that is nobody's input: I/O, a broken store (exit 1).
        case internalError
        /// Too many requests or failed sign-ins for now: retry later (exit 75, EX_TEMPFAIL; HTTP 429).
        case rateLimited
        /// The console's own configuration is wrong: TLS trust, a credential file's mode, a
        /// server URL it must not use (exit 78, EX_CONFIG).
        case configuration
    }

    public let kind: Kind
    public let code: String
    public let message: String

    public init(_ kind: Kind, code: String, _ message: String) {
        self.kind = kind
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public static func invalid(_ code: String, _ message: String) -> ConsoleError {
        ConsoleError(.invalidInput, code: code, message)
    }

    public static func notFound(_ message: String) -> ConsoleError {
        ConsoleError(.notFound, code: "not_found", message)
    }

    public static func usage(_ message: String) -> ConsoleError {
        ConsoleError(.usage, code: "usage", message)
    }

    /// A configuration the operator must fix before anything can work (exit 78).
    public static func configuration(_ code: String, _ message: String) -> ConsoleError {
        ConsoleError(.configuration, code: code, message)
    }

    public static func internalError(_ message: String) -> ConsoleError {
        ConsoleError(.internalError, code: "internal_error", message)
    }

    /// Returns the same error with context prepended, e.g. "while importing backup_account_02ab…".
    public func context(_ prefix: String) -> ConsoleError {
        ConsoleError(kind, code: code, "\(prefix): \(message)")
    }
}
