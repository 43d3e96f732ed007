import BackupctlTestSupport
import Foundation
import Synchronization

/// The real binary on a real pseudo-terminal: a session of its own with the terminal as its
/// controlling terminal, so ^C typed into the master becomes SIGINT.
final class PTY: Sendable {
    let terminal: PseudoTerminal
    let child: ChildProcess
    /// The UTF-8 offset in the transcript just past the last match.
    private let cursor = Mutex(0)

    init(arguments: [String], environment: [String: String], columns: UInt16 = 100) throws {
        terminal = try PseudoTerminal(columns: columns)
        child = try BackupctlBinary.start(arguments, environment: environment, terminal: terminal)
    }

    /// The slave side's device (`/dev/pts/N`).
    var slavePath: String { terminal.slavePath }
    /// Everything the program wrote to the terminal so far (with the echo of what was typed).
    var transcript: String { child.stdout }
    /// The exit status (128 + signal), once it has ended.
    var status: Int32? { child.termination?.status }

    func send(_ text: String) { child.write(text) }

    /// Waits until `needle` appears after the previous match (as `expect(1)` does), or `timeout`
    /// passes; a match moves the cursor past it. Output that arrived together with an earlier
    /// match is still searched, so two prompts printed at once are both found.
    @discardableResult
    func expect(_ needle: String, timeout: Double = 60) async -> Bool {
        let from = cursor.withLock { $0 }
        guard await child.waitFor(seconds: timeout, { Self.match(needle, in: $0.stdout, from: from) != nil }),
            let end = Self.match(needle, in: child.stdoutData, from: from)
        else { return false }
        cursor.withLock { $0 = end }
        return true
    }

    /// The byte offset just past the first `needle` at or after `from`.
    static func match(_ needle: String, in data: Data, from: Int) -> Int? {
        let bytes = Array(needle.utf8)
        guard from <= data.count, let range = data[(data.startIndex + from)...].firstRange(of: bytes) else {
            return nil
        }
        return range.upperBound - data.startIndex
    }

    /// Whether the terminal echoes what is typed (the modes the program set on its side).
    var echoes: Bool { terminal.echoes }

    /// Waits for the program to end; false if it did not within `timeout`.
    func waitForExit(timeout: Double = 60) async -> Bool { await child.wait(seconds: timeout) != nil }
}
