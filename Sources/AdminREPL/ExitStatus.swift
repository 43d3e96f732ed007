import ArgumentParser
import BackupModel

/// The process exit codes: the one table (README "Exit codes", `backupctl --help`), mapped from
/// errors in this one place.
///
/// A script decides from the code alone whether to retry: 2 and 75 are transient (a remote
/// system failed, a rate limit), 78 is not (a configuration to fix), 130/143 mean the run was
/// stopped early by a signal and whatever it reports is partial.
enum ExitStatus {
    static let ok: Int32 = 0
    static let failed: Int32 = 1
    static let remote: Int32 = 2
    static let usage: Int32 = 64
    /// EX_TEMPFAIL: a rate limit; retry later.
    static let temporary: Int32 = 75
    static let permissionDenied: Int32 = 77
    /// EX_CONFIG: TLS trust, credentials, a bad URL or path in the configuration; fix, then rerun.
    static let configuration: Int32 = 78
    static let interrupted: Int32 = 130
    static let terminated: Int32 = 143

    /// The table as `backupctl --help` shows it.
    static let table: [(code: Int32, meaning: String)] = [
        (ok, "success"),
        (failed, "failed: not found, invalid input, verification failed, a conflict, or a local failure"),
        (remote, "a remote system failed (Turnkey, the backup service, the server, PostgreSQL): transient, retry"),
        (usage, "usage: the command line or a script line is wrong (a script runs nothing)"),
        (temporary, "rate limited: transient, retry after a pause"),
        (permissionDenied, "permission denied: no role for this, or no valid token"),
        (configuration, "configuration: TLS trust, credentials, a bad URL or path; fix it, do not retry"),
        (interrupted, "interrupted by SIGINT (Ctrl-C): the job stopped early, its line says how far it got"),
        (terminated, "stopped by SIGTERM: the job stopped early, its line says how far it got"),
    ]

    /// Error codes that are configuration mistakes rather than failures of the moment.
    static let configurationCodes: Set<String> = [
        "database_auth_failed", "tls_untrusted", "tls_failed", "invalid_ca_file", "invalid_tls_cert", "invalid_tls_key",
        "invalid_server", "invalid_url", "invalid_store_path", "invalid_config",
    ]

    /// Error codes of rate limits (the server's sign-in limiter, Turnkey's 429).
    static let rateLimitCodes: Set<String> = ["rate_limited", "turnkey_rate_limited"]

    static func code(for error: ConsoleError) -> Int32 {
        if configurationCodes.contains(error.code) { return configuration }
        if rateLimitCodes.contains(error.code) { return temporary }
        if error.code == "interrupted" { return Interrupts.exitStatus ?? interrupted }
        return code(for: error.kind)
    }

    static func code(for kind: ConsoleError.Kind) -> Int32 {
        switch kind {
        case .invalidInput, .notFound, .verificationFailed, .conflict, .internalError: failed
        case .remote: remote
        case .usage: usage
        case .permissionDenied: permissionDenied
        case .rateLimited: temporary
        case .configuration: configuration
        }
    }

    /// The table as text: `  0  success` …
    static var text: String {
        table.map { "  " + String($0.code).padding(toLength: 5, withPad: " ", startingAt: 0) + $0.meaning }
            .joined(separator: "\n")
    }
}
