import ConsoleStore
import Dispatch
import NIOCore

extension ConsoleServer {
    /// Where operations that may hold a thread for a while run (long jobs, whole-tenant scans,
    /// audit verification): Dispatch's global queue, off NIO's event loops, so one `stats` over
    /// a million backups does not stall the connections that share its loop. Quick operations
    /// (``ConsoleOperation/isQuick``) run where their request is.
    static let blockingExecutor = DispatchTaskExecutor(queue: .global(qos: .userInitiated))
}

/// A task executor over one NIO event loop: the probe listener's tasks (Hummingbird runs each
/// connection as a child task, which inherits the preference) run on its own thread instead of
/// the global executor, which `serve` makes the API's busy event loops.
final class EventLoopTaskExecutor: TaskExecutor {
    private let loop: any EventLoop

    init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        loop.execute { job.runSynchronously(on: executor) }
    }
}
