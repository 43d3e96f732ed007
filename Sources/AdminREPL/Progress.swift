import BackupModel
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Progress of a long command or a remote wait, on stderr, once it has lasted a second: on a
/// terminal a line redrawn in place with a spinner, the count, the total, rate and ETA when
/// known; otherwise a plain line every five seconds (logs of batch runs stay readable). Both
/// end with a closing line when anything was shown.
///
/// Services report into it through their progress closures (``update(_:)``, ``set(done:detail:)``);
/// a timer draws, so a wait with no progress calls at all (a Turnkey request) still shows.
final class Progress: @unchecked Sendable {
    static let delay: TimeInterval = 1
    static let terminalTick: TimeInterval = 0.1
    static let plainEvery: TimeInterval = 5

    private let label: String
    private let output: FileHandle
    private let terminal: Bool
    private let start = Date()
    private let lock = NSLock()
    private let timer: any DispatchSourceTimer
    // Guarded by `lock`.
    private var total: Int?
    private var done: Int?
    private var detail: String?
    private var shown = false
    private var finished = false
    /// The REPL stopped waiting for the command: the line is no longer drawn.
    private let abandonment: Terminal.Abandonment?
    private var frame = 0

    /// - Parameters:
    ///   - total: the count `done` runs up to, when known (then the line shows a percentage and ETA).
    ///   - terminal: whether stderr is a terminal (the default asks).
    ///   - output: where lines go (stderr; tests pass a pipe).
    init(
        label: String, total: Int? = nil, terminal: Bool = isatty(STDERR_FILENO) == 1,
        output: FileHandle = .standardError
    ) {
        self.label = label
        self.output = output
        self.total = total
        self.terminal = terminal
        abandonment = Terminal.abandonment
        timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        timer.schedule(
            deadline: .now() + Self.delay, repeating: terminal ? Self.terminalTick : Self.plainEvery)
        timer.setEventHandler { [weak self] in self?.tick() }
        timer.resume()
    }

    deinit { timer.cancel() }

    /// Records `done`; throws `interrupted` once Ctrl-C was pressed in the REPL, so the command
    /// stops after the batch it is on (every batch is its own transaction).
    func update(_ done: Int) throws(ConsoleError) {
        set(done: done)
        if SignalFlag.isRaised {
            SignalFlag.drain()
            finish()
            throw ConsoleError(
                .conflict, code: "interrupted",
                "Interrupted after \(done) (\(label)); what was done so far is saved and a rerun continues from it.")
        }
    }

    /// Records progress from any thread; `detail` is appended to the line (outcome counts).
    func set(done: Int, total: Int? = nil, detail: String? = nil) {
        lock.withLock {
            self.done = done
            if let total { self.total = total }
            if let detail { self.detail = detail }
        }
    }

    /// The last count and total reported (what an interrupted job says it did and has left).
    var counts: (done: Int?, total: Int?) { lock.withLock { (done, total) } }

    /// Stops drawing; a closing line with the final count replaces the progress line if one
    /// was shown. `failed` makes it say so: a line never says `done` before the outcome is
    /// known, and not at all when the command then fails.
    func finish(failed: Bool = false) {
        timer.cancel()
        draw(final: true, failed: failed)
    }

    /// Runs `body`, showing that it is waiting (`label: waiting… 3s`) when it takes over a second.
    /// Runs on the caller's actor (`isolation`), so `body` need not be `Sendable`.
    static func waiting<T, Failure: Error>(
        _ label: String, isolation: isolated (any Actor)? = #isolation, _ body: () async throws(Failure) -> T
    ) async throws(Failure) -> T {
        let progress = Progress(label: label)
        do {
            let value = try await body()
            progress.finish()
            return value
        } catch {
            progress.finish(failed: true)
            throw error
        }
    }

    /// Draws the current state once (the timer's work; tests call it directly).
    func tick() { draw(final: false) }

    private func draw(final: Bool, failed: Bool = false) {
        lock.withLock {
            guard !finished, abandonment?.isSet != true else { return }
            if final {
                finished = true
                guard shown else { return }
            }
            shown = true
            frame += 1
            let line = Self.line(
                label: label, done: done, total: total, detail: detail, elapsed: Date().timeIntervalSince(start),
                final: final, failed: failed)
            let text: String
            if terminal {
                let spinner = final ? "" : String(Self.frames[frame % Self.frames.count]) + " "
                text = "\r\u{1B}[K" + spinner + line + (final ? "\n" : "")
            } else {
                text = line + "\n"
            }
            output.write(Data(text.utf8))
        }
    }

    private static let frames = Array("|/-\\")

    /// `seed: 1200/5000 (24%), 300/s, ETA 13s`, `check: 800 done, 400/s`, `cleanup scan: waiting, 3s`.
    /// Total over any counts (a server's frames are outside input): the arithmetic is in
    /// `Double` and every figure is clamped before it becomes an `Int` again.
    static func line(
        label: String, done: Int?, total: Int?, detail: String?, elapsed: TimeInterval, final: Bool,
        failed: Bool = false
    ) -> String {
        var parts: [String] = []
        let seconds = elapsed.isFinite ? max(elapsed, 0.001) : 0.001
        if let done {
            let rate = Double(done) / seconds
            if let total, total > 0 {
                let percent = Int(min(100, max(0, Double(done) * 100 / Double(total))))
                parts.append("\(done)/\(total) (\(percent)%)")
                parts.append("\(whole(rate))/s")
                if !final, rate > 0, done < total {
                    parts.append("ETA \(duration((Double(total) - Double(done)) / rate))")
                }
            } else {
                parts.append("\(done) done")
                parts.append("\(whole(rate))/s")
            }
            if failed { parts.append("failed") }
        } else {
            parts.append(final ? (failed ? "failed" : "done") : "waiting")
        }
        // A server's frame is outside input: its control characters are escaped.
        if let detail { parts.append(UntrustedText.escaped(detail)) }
        parts.append(final ? "in \(duration(elapsed))" : duration(elapsed))
        return "\(label): " + parts.joined(separator: ", ")
    }

    /// A rate as a whole number, clamped (never a trap on an absurd count).
    static func whole(_ value: Double) -> Int {
        guard value.isFinite else { return 0 }
        return Int(min(max(value, -1e15), 1e15))
    }

    static func duration(_ seconds: TimeInterval) -> String {
        let whole = Self.whole(seconds.rounded())
        if whole < 60 { return "\(whole)s" }
        if whole < 3600 { return "\(whole / 60)m\(String(format: "%02d", whole % 60))s" }
        return "\(whole / 3600)h\(String(format: "%02d", whole / 60 % 60))m"
    }
}
