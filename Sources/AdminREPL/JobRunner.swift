import BackupModel
import ConsoleService
import Foundation

extension CommandContext {
    /// Runs a long operation (import, seed, check, cleanup run) with its progress on stderr.
    /// Ctrl-C in the REPL cancels it: in-process the job stops after the batch it is on; against
    /// a server the request is dropped and the server stops the job after its in-flight calls.
    func performJob<Op: ConsoleOperation>(_ operation: Op, label: String, total: Int? = nil) async throws(ConsoleError)
        -> Op.Output
    {
        let progress = Progress(label: label, total: total)
        defer { progress.finish() }
        let console = try console
        let caller = try caller
        let job = Task { () async throws -> Op.Output in
            try await console.perform(operation, as: caller) { event in
                progress.set(done: event.done, total: event.total, detail: event.detail)
            }
        }
        // Ctrl-C raises the flag (the REPL's handler); poll it while the job runs.
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
        do {
            return try await job.value
        } catch let error as ConsoleError {
            throw error
        } catch {
            throw .internalError("\(label) failed: \(error)")
        }
    }
}
