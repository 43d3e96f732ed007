import ArgumentParser
import BackupModel

/// The process exit codes of DESIGN.md §2, mapped from error kinds in this one place.
enum ExitStatus {
    static let ok: Int32 = 0
    static let failed: Int32 = 1
    static let remote: Int32 = 2
    static let usage: Int32 = 64
    static let permissionDenied: Int32 = 77
    /// EX_TEMPFAIL: rate limited; the same command succeeds later (the server's `Retry-After`).
    static let tempFail: Int32 = 75
    /// EX_CONFIG: TLS trust, a credential file's mode, a server URL the console will not use.
    static let configuration: Int32 = 78

    static func code(for kind: ConsoleError.Kind) -> Int32 {
        switch kind {
        case .invalidInput, .notFound, .verificationFailed, .conflict, .internalError: failed
        case .remote: remote
        case .usage: usage
        case .permissionDenied: permissionDenied
        case .rateLimited: tempFail
        case .configuration: configuration
        }
    }
}
