import BackupModel
import ConsoleService
import Foundation
import Synchronization

extension CommandContext {
    /// Runs a long operation (import, seed, check, cleanup run) with its progress on stderr.
    /// Ctrl-C in the REPL cancels it: in-process the job stops after the batch it is on; against
    /// a server the request is dropped and the server stops the job after its in-flight calls.
    func performJob<Op: ConsoleOperation>(_ operation: Op, label: String, total: Int? = nil) async throws(ConsoleError)
        -> Op.Output
    {
        let progress = Progress(label: label, total: total)
        let console = try console
        let caller = try caller
        let pause = JobCheckpoint(environment: environment)
        let stop = JobStop()
        let job = Task { () async throws -> Op.Output in
            try await console.perform(operation, as: caller) { event in
                progress.set(done: event.done, total: event.total, detail: event.detail)
                pause.reached()
                // A signal stops the job at this report, not at the watcher's next look: the
                // job's next batch may be ready and written before then.
                if SignalFlag.isRaised {
                    SignalFlag.drain()
                    stop.now()
                }
            }
        }
        stop.arm { job.cancel() }
        // Ctrl-C (and SIGTERM outside the REPL) raise the flag; poll it while the job runs.
        let watcher = Task {
            while !Task.isCancelled {
                if SignalFlag.isRaised {
                    SignalFlag.drain()
                    job.cancel()
                    return
                }
                try? await Task.sleep(nanoseconds: 50_000_000)
            }
        }
        defer { watcher.cancel() }
        let result = await Interrupts.finishing { await job.result }
        watcher.cancel()
        if job.isCancelled {
            let (done, known) = progress.counts
            interruption = JobInterruption(
                label: label, done: done ?? 0, total: known ?? total, signal: Interrupts.signal)
        }
        do {
            let value = try result.get()
            progress.finish()
            return value
        } catch let error as ConsoleError {
            progress.finish(failed: true)
            if let interruption, error.code == "interrupted" || error.code == "cancelled" {
                throw interruption.error
            }
            throw error
        } catch {
            progress.finish(failed: true)
            throw .internalError("\(label) failed: \(error)")
        }
    }
}

extension CommandContext {
    /// Runs a quick operation from synchronous code on the main actor (readline's completion
    /// callback): the call runs off the main actor and is waited for, at most `seconds`.
    func performBlocking<Op: ConsoleOperation>(_ operation: Op, seconds: Double = 2) throws(ConsoleError) -> Op.Output {
        let console = try console
        let caller = try caller
        let box = BlockingResult<Op.Output>()
        let task = Task.detached {
            do throws(ConsoleError) {
                box.set(.success(try await console.perform(operation, as: caller)))
            } catch {
                box.set(.failure(error))
            }
        }
        guard box.wait(seconds: seconds) else {
            task.cancel()
            throw ConsoleError(.remote, code: "timeout", "\(Op.name) took longer than \(seconds) s.")
        }
        return try box.result.get()
    }

    /// The operator and tenant the prompt shows: asked once, and again after the tenant changes.
    func identity() async -> WhoamiOperation.Output? {
        if let known = whoami, known.tenant == tenantName || tenantName == nil { return known }
        whoami = try? await perform(WhoamiOperation())
        return whoami
    }
}

/// A result handed from a detached task to a waiting thread.
final class BlockingResult<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private let done = DispatchSemaphore(value: 0)
    private var value: Result<Value, ConsoleError>?

    func set(_ result: Result<Value, ConsoleError>) {
        lock.withLock { value = result }
        done.signal()
    }

    func wait(seconds: Double) -> Bool { done.wait(timeout: .now() + seconds) == .success }

    var result: Result<Value, ConsoleError> {
        lock.withLock { value } ?? .failure(.internalError("no result"))
    }
}

/// Cancels a job from its own progress reports: a stop asked for before the job's task is
/// armed cancels it as soon as it is.
private final class JobStop: Sendable {
    private struct State: Sendable {
        var cancel: (@Sendable () -> Void)?
        var stopped = false
    }

    private let state = Mutex(State())

    func arm(_ action: @escaping @Sendable () -> Void) {
        let stopped = state.withLock { state in
            state.cancel = action
            return state.stopped
        }
        if stopped { action() }
    }

    func now() {
        state.withLock { state in
            state.stopped = true
            return state.cancel
        }?()
    }
}
