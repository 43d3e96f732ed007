import Access
import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import SQLiteStore

#if canImport(Glibc)
    import Glibc
#endif

/// The console as an operator meets it, through the real release binary: start to first
/// prompt on a pseudo-terminal, and a 100,000-line `-f` script of lookups (the median of three runs).
/// References in the same run: `backupctl --version` (process start without the store), and
/// the script's keys resolved and audited through the C API (``RawAuditedLookup``).
struct ConsoleBench: BenchSuite {
    let name = "console"

    func run(_ scale: BenchScale) async throws -> [String: BenchValue] {
        guard BackupctlBinary.exists else {
            return ["error": .text("build the backupctl product in the same configuration first (make bench does)")]
        }
        let directory = scratchDirectory("console")
        defer { try? FileManager.default.removeItem(at: directory) }
        let backups = scale.pick(5_000, quick: 300)
        let seeded = try await SeededStore(in: directory, backups: backups)
        let dbPath = seeded.path
        let tokenText = seeded.tokenText

        var environment = ProcessInfo.processInfo.environment
        environment["BACKUPCTL_DB"] = dbPath
        environment["BACKUPCTL_TOKEN"] = tokenText
        environment["XDG_STATE_HOME"] = directory.appendingPathComponent("state").path
        environment["TERM"] = "dumb"

        // Start to first prompt, on a pseudo-terminal.
        var prompt = Samples()
        var version = Samples()
        for _ in 0..<scale.pick(20, quick: 5) {
            prompt.add(try await timeToPrompt(environment: environment))
            let start = nowNanos()
            try await runQuiet(["--version"], environment: environment)
            version.add(nowNanos() - start)
        }

        // A script of lookups over the seeded passkeys, cycled to the target length.
        let keys = try await seeded.passkeys()
        let lines = scale.pick(100_000, quick: 2_000)
        var script = ""
        script.reserveCapacity(lines * 40)
        for i in 0..<lines { script += "lookup passkey \(keys[i % keys.count])\n" }
        let scriptPath = directory.appendingPathComponent("lookups.bctl").path
        try script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        // The script three times on the same store (each run appends its entries to the log):
        // one run on a shared machine is off by a tenth either way, so the figure is the median,
        // with the fastest and slowest beside it. After each run, the reference in the same
        // store: the same keys resolved and audited through the C API, 256 rows a transaction
        // (``RawAuditedLookup/lookups(tenant:pks:group:at:)``), so a slow figure can be told from
        // a slow machine.
        let raw = try RawAuditedLookup(path: dbPath)
        let pks = (0..<lines).map { "MAIN#PK|\(keys[$0 % keys.count])" }
        var runs = Samples()
        var reference = Samples()
        for _ in 0..<Self.scriptRuns {
            var start = nowNanos()
            // Some seeded rows are deliberate drift (unauthorized_factor): keep going past them.
            try await runQuiet(
                ["--format", "json", "--continue-on-error", "-f", scriptPath], environment: environment,
                allowFailure: true)
            runs.add(nowNanos() - start)
            start = nowNanos()
            _ = raw.lookups(tenant: "sandbox", pks: pks, group: 256, at: Int64(start / 1_000_000))
            reference.add(nowNanos() - start)
        }
        let scriptSeconds = runs.percentile(0.5) / 1e9

        return [
            "startToPromptMedianMillis": .number(prompt.percentile(0.5) / 1e6),
            "startToPromptP90Millis": .number(prompt.percentile(0.9) / 1e6),
            "referenceVersionMedianMillis": .number(version.percentile(0.5) / 1e6),
            "startToPromptTargetMillis": .integer(100),
            "scriptLookups": .integer(lines),
            "scriptSeconds": .number(scriptSeconds),
            "scriptSecondsFastest": .number(runs.percentile(0) / 1e9),
            "scriptSecondsSlowest": .number(runs.percentile(1) / 1e9),
            "scriptRuns": .integer(Self.scriptRuns),
            "referenceRawLookupsSeconds": .number(reference.percentile(0.5) / 1e9),
            "scriptToRawLookupsRatio": .number(runs.percentile(0.5) / max(1, reference.percentile(0.5))),
            "scriptLookupsPerSecond": .number(Double(lines) / scriptSeconds),
            "scriptTargetSecondsFor100k": .integer(5),
            "seededBackups": .integer(backups),
        ]
    }

    /// How many times the script runs; `scriptSeconds` is their median.
    static let scriptRuns = 3

    /// Nanoseconds from spawn until the REPL prompt ("> ") shows on the pty.
    private func timeToPrompt(environment: [String: String]) async throws -> UInt64 {
        let terminal = try PseudoTerminal()
        let start = nowNanos()
        let child = try BackupctlBinary.start([], environment: environment, terminal: terminal)
        defer { child.killNow() }
        guard await child.waitForStdout("> ", seconds: 10) else { throw POSIXError(.ETIMEDOUT) }
        let elapsed = nowNanos() - start
        await child.stop(seconds: 10)
        return elapsed
    }

    private func runQuiet(_ arguments: [String], environment: [String: String], allowFailure: Bool = false)
        async throws
    {
        let result = try await BackupctlBinary.run(arguments, environment: environment, seconds: 600)
        if !allowFailure, result.status != 0 { throw POSIXError(.EIO) }
    }
}
