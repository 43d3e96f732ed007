import Dispatch

extension ConsoleServer {
    /// Where operations that may hold a thread for a while run (long jobs, whole-tenant scans,
    /// audit verification): Dispatch's global queue, off NIO's event loops, so one `stats` over
    /// a million backups does not stall the connections that share its loop. Quick operations
    /// (``ConsoleOperation/isQuick``) run where their request is.
    static let blockingExecutor = DispatchTaskExecutor()
}

/// A task executor over Dispatch's global concurrent queue.
final class DispatchTaskExecutor: TaskExecutor {
    private let queue = DispatchQueue.global(qos: .userInitiated)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
