import BackupctlTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The one process runner: output drained together, bounded waits, groups killed, terminals.
@Suite(.timeLimit(.minutes(10)))
struct ChildProcessTests {
    static let environment = ["PATH": "/usr/bin:/bin"]

    @Test func runCollectsBothStreamsAndTheStatus() async throws {
        let result = try await ChildProcess.run(
            "/bin/sh", ["-c", "echo out; echo err >&2; exit 3"], environment: Self.environment)
        #expect(result.stdout == "out\n")
        #expect(result.stderr == "err\n")
        #expect(result.termination == .exited(3))
        #expect(result.status == 3 && !result.signaled)
    }

    /// More than a pipe holds on both streams at once: a runner that read one to the end first would deadlock.
    @Test func chattyChildOnBothPipesNeverBlocks() async throws {
        let script = "head -c 1000000 /dev/zero | tr '\\0' a; head -c 1000000 /dev/zero | tr '\\0' b >&2"
        let result = try await ChildProcess.run("/bin/sh", ["-c", script], environment: Self.environment)
        #expect(result.stdout.utf8.count == 1_000_000)
        #expect(result.stderr.utf8.count == 1_000_000)
        #expect(result.status == 0)
    }

    @Test func stdinIsFedAndClosed() async throws {
        let text = String(repeating: "line\n", count: 50_000)
        let result = try await ChildProcess.run(
            "/bin/cat", [], environment: Self.environment, input: .data(Data(text.utf8)))
        #expect(result.stdout == text)
    }

    @Test func emptyStdinIsEndOfFileAtOnce() async throws {
        let result = try await ChildProcess.run(
            "/bin/cat", [], environment: Self.environment, input: .data(Data()), seconds: 60)
        #expect(result.stdout.isEmpty && result.status == 0)
    }

    @Test func anOpenStdinIsWrittenThenClosed() async throws {
        let child = try ChildProcess.start("/bin/cat", [], environment: Self.environment, input: .open)
        child.write("first\n")
        #expect(await child.waitForStdout("first\n", seconds: 30))
        child.write("second\n")
        child.closeInput()
        let end = await child.wait(seconds: 30)
        #expect(end == .exited(0))
        #expect(child.stdout == "first\nsecond\n")
    }

    @Test func aSignalIsReportedAsSuch() async throws {
        let child = try ChildProcess.start("/bin/sleep", ["600"], environment: Self.environment)
        #expect(child.isRunning)
        let end = await child.stop(seconds: 30)
        #expect(end == .signaled(SIGTERM))
        #expect(end.status == 128 + SIGTERM)
    }

    @Test func aDeadlineKillsTheGroupAndThrows() async throws {
        await #expect(throws: ChildProcessError.self) {
            _ = try await ChildProcess.run("/bin/sleep", ["600"], environment: Self.environment, seconds: 0.2)
        }
    }

    /// The leader's exit takes its group with it: a background straggler never outlives the run.
    @Test func straggersDieWithTheirLeader() async throws {
        let result = try await ChildProcess.run(
            "/bin/sh", ["-c", "sleep 600 & echo $!"], environment: Self.environment, seconds: 30)
        let straggler = try #require(pid_t(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(await Self.gone(straggler))
    }

    @Test func workingDirectoryAndEnvironmentAreTheChildsOwn() async throws {
        let directory = FileManager.default.temporaryDirectory.path
        let result = try await ChildProcess.run(
            "sh", ["-c", "pwd; echo \"$ONLY\""], environment: ["PATH": "/usr/bin:/bin", "ONLY": "this"],
            directory: directory)
        #expect(result.lines == [URL(fileURLWithPath: directory).resolvingSymlinksInPath().path, "this"])
    }

    @Test func aMissingExecutableIsASpawnFailure() {
        #expect(throws: ChildProcessError.self) {
            _ = try ChildProcess.start("/nonexistent/tool", [], environment: Self.environment)
        }
    }

    @Test func aTerminalGivesAControllingTTYAndCtrlCIsSIGINT() async throws {
        let terminal = try PseudoTerminal()
        let child = try ChildProcess.start(
            "/bin/sh", ["-c", "tty; trap 'echo got-int; exit 7' INT; echo ready; while :; do sleep 0.05; done"],
            environment: Self.environment, terminal: terminal)
        #expect(await child.waitForStdout("ready", seconds: 30))
        #expect(child.stdout.contains("/dev/pts/"))
        child.write("\u{03}")
        #expect(await child.wait(seconds: 30) == .exited(7))
        #expect(child.stdout.contains("got-int"))
    }

    @Test func aCancelledWaitReturnsAtOnce() async throws {
        let child = try ChildProcess.start("/bin/sleep", ["600"], environment: Self.environment)
        defer { child.killNow() }
        let waiting = Task { await child.waitForStdout("never", seconds: 600) }
        waiting.cancel()
        #expect(await waiting.value == false)
    }

    /// SIGKILL a process that started children through the runner: the reaper kills their groups.
    @Test func childrenDieWithAKilledParent() async throws {
        let probe = try #require(Self.probeBinary, "build the probe first: swift build --build-tests")
        let parent = try ChildProcess.start(
            probe, ["sleep 600", "sleep 600 & sleep 600 & wait"], environment: Self.environment)
        #expect(await parent.waitForStdout("\n", seconds: 60), "\(parent.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(parent.stdout.utf8)) as? [String: [Int]]
        let pids = try #require(object?["pids"]).map { pid_t($0) }
        #expect(pids.count == 2)
        for pid in pids { #expect(Self.alive(pid)) }
        parent.signal(SIGKILL)
        #expect(await parent.wait(seconds: 30) == .signaled(SIGKILL))
        for pid in pids { #expect(await Self.gone(pid), "\(pid) outlived its killed parent") }
    }

    static var probeBinary: String? {
        let directory = URL(fileURLWithPath: BackupctlBinary.url.path).deletingLastPathComponent()
        let path = directory.appendingPathComponent("ChildReaperProbe").path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    /// Alive and not a zombie (a zombie is dead; init may be slow to reap it in a container).
    static func alive(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
        guard let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(close, offsetBy: 2)]
        return state != "Z" && state != "X"
    }

    /// Polls (bounded: 30 s) until `pid` is dead.
    static func gone(_ pid: pid_t) async -> Bool {
        for _ in 0..<600 {
            if !alive(pid) { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return !alive(pid)
    }
}
