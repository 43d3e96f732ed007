import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import ConsoleServer

/// The probe listener's tasks run on its own event loop: under the executor's preference a task
/// and the child tasks of its groups (Hummingbird serves each connection as one) run on that
/// loop, not on the global executor `serve` gives the API.
@Suite struct EventLoopTaskExecutorTests {
    @Test func tasksAndTheirChildrenRunOnTheLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let executor = EventLoopTaskExecutor(loop)
        let childrenOffLoop = Counter()
        let onLoop = await withTaskExecutorPreference(executor) { () async -> [Bool] in
            var seen = [loop.inEventLoop]
            await withDiscardingTaskGroup { children in
                for _ in 0..<4 {
                    children.addTask { if !loop.inEventLoop { childrenOffLoop.count.withLock { $0 += 1 } } }
                }
            }
            seen.append(await Self.nonisolatedHop(loop))
            return seen
        }
        #expect(onLoop == [true, true])
        #expect(childrenOffLoop.count.withLock { $0 } == 0)
        #expect(await Self.nonisolatedHop(loop) == false)
        try await group.shutdownGracefully()
    }

    final class Counter: Sendable {
        let count = Mutex(0)
    }

    /// Whether a nonisolated async function (a probe's handler) runs on `loop`.
    nonisolated static func nonisolatedHop(_ loop: any EventLoop) async -> Bool {
        await Task.yield()
        return loop.inEventLoop
    }
}
