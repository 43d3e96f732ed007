import BackupctlTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs one runbook's blocks in order in a fresh store, the way an operator would type them:
/// each `$ ` line through `/bin/sh -c` in a scratch directory, `backupctl` on the PATH, the
/// captured values in the environment.
///
/// Shell built-ins that must outlive one line are kept here: `export NAME=VALUE`, `unset NAME`,
/// `COMMAND &` (a background process; `$!` is its pid) and `kill $!` (SIGTERM, then wait).
final class DrillSession {
    var cli: CLI
    /// Where the next command runs: the scratch root (holding `runbooks/fixtures`) at the start
    /// of each runbook, then wherever the runbook's `cd` took it.
    private(set) var work: URL
    let root: URL
    var environment: [String: String]
    /// Directories the runbooks made with `mktemp -d` and moved into: removed at the end.
    private var scratch: [URL] = []
    private(set) var log: [String] = []
    private(set) var skipped: [String] = []
    private var background: [Background] = []

    /// A command started with `&`: `$!` is its pid.
    struct Background {
        let child: ChildProcess
        let command: String

        var result: CLI.Result {
            let output = child.output
            return CLI.Result(
                stdout: output.stdoutText, stderr: output.stderrText, termination: output.termination ?? .exited(0))
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// A fresh store, an admin `root` of the `sandbox` tenant (token exported), and a copy of
    /// `runbooks/fixtures` under the scratch directory.
    init(repoRoot: URL) async throws {
        cli = CLI()
        _ = try await cli.bootstrap()
        root = cli.directory.appendingPathComponent("work")
        work = root
        let fixtures = work.appendingPathComponent("runbooks/fixtures")
        try FileManager.default.createDirectory(
            at: work.appendingPathComponent("runbooks"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: repoRoot.appendingPathComponent("runbooks/fixtures"), to: fixtures)
        environment = cli.environment
        let binDir = CLI.binary.deletingLastPathComponent().path
        environment["PATH"] = binDir + ":/usr/bin:/bin"
        environment["PWD"] = work.path
        environment["NO_COLOR"] = "1"
    }

    /// Kills what the drill left running (each background job's process group), the runbooks'
    /// scratch directories and the store.
    func finish() {
        for job in background { job.child.killNow() }
        for directory in scratch { try? FileManager.default.removeItem(at: directory) }
        cli.cleanUp()
    }

    /// A runbook starts where an operator would: at the root (the repository, here a copy of
    /// its fixtures), with nothing of an earlier runbook running.
    func begin(_ runbook: String) {
        work = root
        environment["PWD"] = root.path
    }

    /// A runbook stops what it started: a background job still running at its end fails it.
    func end(_ runbook: String) throws {
        let running = background.filter { $0.child.isRunning }
        for job in running { job.child.killNow() }
        background.removeAll()
        guard running.isEmpty else {
            throw Failure(
                description: "\(runbook) left running: \(running.map(\.command).joined(separator: "; "))")
        }
    }

    // MARK: - Blocks

    func run(_ block: DrillRunbook.Block, in runbook: String) async throws {
        guard let annotation = block.annotation else {
            throw Failure(description: "\(runbook):\(block.line): not annotated")
        }
        if annotation.isSkip { return }
        for tool in annotation.requires where !hasTool(tool) {
            skipped.append("\(runbook):\(block.line) (needs \(tool))")
            return
        }
        if let file = annotation.file {
            let url = work.appendingPathComponent(file)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try (block.body.joined(separator: "\n") + "\n").write(to: url, atomically: true, encoding: .utf8)
            if let mode = annotation.mode, let bits = Int(mode, radix: 8) {
                try FileManager.default.setAttributes([.posixPermissions: bits], ofItemAtPath: url.path)
            }
            return
        }
        var last: CLI.Result?
        for command in block.commands {
            let place = "\(runbook):\(command.line)"
            let result = try await execute(command, annotation: annotation, place: place)
            log.append("\(place) $ \(command.text) → exit \(result.status)")
            try check(result, against: command, annotation: annotation, place: place)
            last = result
        }
        if let last {
            for capture in annotation.captures {
                guard let value = Self.extract(capture.source, from: last) else {
                    throw Failure(
                        description:
                            "\(runbook):\(block.line): capture \(capture.name) found nothing in\n\(last.stdout)\n\(last.stderr)"
                    )
                }
                environment[capture.name] = value
            }
        }
    }

    // MARK: - Commands

    func execute(_ command: DrillRunbook.Command, annotation: DrillRunbook.Annotation, place: String) async throws
        -> CLI.Result
    {
        let text = command.text
        if text.hasPrefix("export "), text.hasSuffix("=$!") {
            // `export NAME=$!`: the last background job's pid, for a `kill $NAME` later.
            guard let job = background.last else { throw Failure(description: "\(place): no background job") }
            environment[String(text.dropFirst("export ".count).dropLast(3))] = String(job.child.pid)
            return CLI.Result(stdout: "", stderr: "", termination: .exited(0))
        }
        if text.hasPrefix("export ") {
            let assignment = String(text.dropFirst("export ".count))
            guard let eq = assignment.firstIndex(of: "="), !assignment[..<eq].contains(" ") else {
                throw Failure(description: "\(place): export needs NAME=VALUE")
            }
            let name = String(assignment[..<eq])
            let shown = String(assignment[assignment.index(after: eq)...])
            if shown.contains("…") {
                // The visible line of a captured value: what was captured must look like it.
                let captured = environment[name] ?? ""
                let result = CLI.Result(stdout: captured, stderr: "", termination: .exited(0))
                guard Self.mismatch(result, expected: [shown]) == nil else {
                    throw Failure(description: "\(place): captured \(name)=\(captured) does not look like \(shown)")
                }
                return CLI.Result(stdout: "", stderr: "", termination: .exited(0))
            }
            let value = try await shell(
                "export \(assignment); printf '%s' \"$\(name)\"", timeout: annotation.timeout)
            guard value.status == 0 else { throw Failure(description: "\(place): \(text) failed: \(value.stderr)") }
            environment[name] = value.stdout
            return CLI.Result(stdout: "", stderr: value.stderr, termination: .exited(0))
        }
        if text.hasPrefix("unset ") {
            for name in text.dropFirst("unset ".count).split(separator: " ") { environment[String(name)] = nil }
            return CLI.Result(stdout: "", stderr: "", termination: .exited(0))
        }
        if text.hasPrefix("kill ") {
            return try await stop(text.split(separator: " ").dropFirst().map(String.init), place: place)
        }
        if text.hasPrefix("cd ") {
            // `cd DIR` (`cd "$(mktemp -d)"`): the shell resolves DIR; later lines run there.
            let moved = try await shell(text + " && pwd", timeout: annotation.timeout)
            let path = moved.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            guard moved.status == 0, path.hasPrefix("/") else {
                throw Failure(description: "\(place): \(text) failed: \(moved.stderr)")
            }
            work = URL(fileURLWithPath: path)
            environment["PWD"] = path
            if !path.hasPrefix(root.path) { scratch.append(work) }
            return CLI.Result(stdout: "", stderr: "", termination: .exited(0))
        }
        if text.hasSuffix(" &") {
            return try await startBackground(String(text.dropLast(2)), expected: command.expected, place: place)
        }
        var substituted = text
        if let pid = background.last?.child.pid {
            substituted = substituted.replacingOccurrences(of: "$!", with: "\(pid)")
        }
        return try await shell(substituted, timeout: annotation.timeout)
    }

    /// `kill $!` or `kill $NAME …`: SIGTERM to those background jobs, then waits for each.
    func stop(_ targets: [String], place: String) async throws -> CLI.Result {
        var last: CLI.Result?
        for target in targets {
            let pid =
                target == "$!" ? background.last.map { String($0.child.pid) } : environment[String(target.dropFirst())]
            guard target.hasPrefix("$"), let pid, let job = background.first(where: { String($0.child.pid) == pid })
            else { throw Failure(description: "\(place): kill \(target) names no background job") }
            job.child.signal(SIGTERM)
            guard await job.child.wait(seconds: 60) != nil else {
                throw Failure(description: "\(place): \(job.command) did not stop on SIGTERM")
            }
            last = job.result
        }
        return last ?? CLI.Result(stdout: "", stderr: "", termination: .exited(0))
    }

    /// `sh -c TEXT` in the scratch directory, stdin closed, bounded by `timeout` (then killed:
    /// the drill fails with what it printed).
    func shell(_ text: String, timeout: TimeInterval) async throws -> CLI.Result {
        try await ChildProcess.run(
            "/bin/sh", ["-c", text], environment: environment, directory: work.path, seconds: timeout)
    }

    /// Starts `text` (through `exec`, so `$!` is the command itself) and waits until it printed
    /// every expected line — a server is ready once it announced its address.
    func startBackground(_ text: String, expected: [String], place: String) async throws -> CLI.Result {
        let child = try ChildProcess.start(
            "/bin/sh", ["-c", "exec " + text], environment: environment, directory: work.path)
        let job = Background(child: child, command: text)
        background.append(job)
        let ready = await child.waitFor(seconds: 60) { output in
            Self.mismatch(
                CLI.Result(stdout: output.stdoutText, stderr: output.stderrText, termination: .exited(0)),
                expected: expected) == nil
        }
        guard ready else {
            throw Failure(
                description:
                    "\(place): background `\(text)` did not print what the runbook shows:\n\(job.result.stdout)\n\(job.result.stderr)"
            )
        }
        return job.result
    }

    func hasTool(_ tool: String) -> Bool {
        (environment["PATH"] ?? "").split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)")
        }
    }

    // MARK: - Expectations

    func check(
        _ result: CLI.Result, against command: DrillRunbook.Command, annotation: DrillRunbook.Annotation, place: String
    ) throws {
        if command.text.hasSuffix(" &") || command.text.hasPrefix("export ") || command.text.hasPrefix("unset ")
            || command.text.hasPrefix("cd ")
        {
            return
        }
        let expectedStatus: Int32 = command.text.hasPrefix("kill ") ? result.status : annotation.exit
        guard result.status == expectedStatus else {
            throw Failure(
                description:
                    "\(place): `\(command.text)` exited \(result.status), the runbook says \(expectedStatus)\nstdout:\n\(result.stdout)\nstderr:\n\(result.stderr)"
            )
        }
        if let missing = Self.mismatch(result, expected: command.expected) {
            throw Failure(
                description:
                    "\(place): `\(command.text)` did not print the line the runbook shows:\n  \(missing)\nstdout:\n\(result.stdout)\nstderr:\n\(result.stderr)"
            )
        }
    }

    /// The first expected line with no match (in order, per stream), or nil when all match.
    static func mismatch(_ result: CLI.Result, expected: [String]) -> String? {
        let streams = [result.stdout, result.stderr].map {
            $0.components(separatedBy: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        var cursors = [0, 0]
        for raw in expected {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line == "…" { continue }
            // `…` is any text; a run of spaces is any run of spaces (column widths follow the data).
            let pattern =
                "^"
                + line.components(separatedBy: "…").map {
                    NSRegularExpression.escapedPattern(for: $0).replacingOccurrences(
                        of: " +", with: " +", options: .regularExpression)
                }.joined(separator: ".*") + "$"
            guard let regex = try? NSRegularExpression(pattern: pattern) else { return raw }
            var found = false
            for s in 0..<2 where !found {
                let lines = streams[s]
                var i = cursors[s]
                while i < lines.count {
                    let candidate = lines[i]
                    if regex.firstMatch(in: candidate, range: NSRange(candidate.startIndex..., in: candidate)) != nil {
                        cursors[s] = i + 1
                        found = true
                        break
                    }
                    i += 1
                }
            }
            if !found { return raw }
        }
        return nil
    }

    static func extract(_ source: DrillRunbook.Capture.Source, from result: CLI.Result) -> String? {
        switch source {
        case .json(let path):
            for line in result.stdout.split(separator: "\n").reversed() {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) else { continue }
                var node: Any? = object
                for part in path.split(separator: ".") {
                    if let index = Int(part), let array = node as? [Any] {
                        node = index < array.count ? array[index] : nil
                    } else {
                        node = (node as? [String: Any])?[String(part)]
                    }
                }
                if let string = node as? String { return string }
                if let number = node as? NSNumber { return number.stringValue }
            }
            return nil
        case .regex(let pattern):
            guard let regex = try? NSRegularExpression(pattern: pattern) else { return nil }
            let text = result.stdout + "\n" + result.stderr
            guard let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
                match.numberOfRanges > 1,
                let range = Range(match.range(at: 1), in: text)
            else { return nil }
            return String(text[range])
        }
    }
}
