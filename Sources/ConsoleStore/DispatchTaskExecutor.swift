import Dispatch

/// A task executor over a Dispatch queue: the tasks that prefer it run on the queue's threads,
/// never on the executor of whoever started them (a server's event loops, which must not wait
/// for a disk or a long scan while their connections wait behind them).
public final class DispatchTaskExecutor: TaskExecutor {
    private let queue: DispatchQueue

    public init(queue: DispatchQueue) { self.queue = queue }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
