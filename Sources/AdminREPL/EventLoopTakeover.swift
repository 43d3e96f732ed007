import NIOCore
import NIOPosix
import Synchronization

/// Makes NIO's event loops Swift concurrency's global executor for this process, so an HTTP
/// exchange is written, answered and resumed on its connection's thread instead of hopping
/// between NIO's threads and the cooperative pool at every `await`. `serve` does it (work that
/// may hold a thread for long runs on the server's own executor instead), and so does a console
/// that talks to a server (`--server`), whose work between requests is rendering. A console on
/// the local store does not: its sandbox servers share those loops with store work.
enum EventLoopTakeover {
    private static let done = Mutex(false)

    /// Installs it once, from the main thread; later calls do nothing.
    @MainActor static func install() {
        let first = done.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }
}
