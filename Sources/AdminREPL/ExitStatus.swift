import ArgumentParser
import BackupModel

/// The process exit codes of DESIGN.md §2, mapped from error kinds in this one place.
enum ExitStatus {
    static let ok: Int32 = 0
    static let failed: Int32 = 1
    static let remote: Int32 = 2
    static let usage: Int32 = 64
    static let permissionDenied: Int32 = 77

    static func code(for kind: ConsoleError.Kind) -> Int32 {
        switch kind {
        case .invalidInput, .notFound, .verificationFailed, .conflict, .internalError: failed
        case .remote: remote
        case .usage: usage
        case .permissionDenied: permissionDenied
        }
    }
}
