import Synchronization

/// Who may use the writer connection, one at a time and in arrival order: a store transaction
/// spans several statements (and `await`s between them), so the connection is held by the
/// transaction, not by GRDB's queue for one closure. An uncontended acquire is one lock.
final class WriterGate: Sendable {
    private struct State {
        var busy = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Waits for the writer; every acquire is paired with one ``release()``.
    func acquire() async {
        let free = state.withLock { state in
            guard !state.busy else { return false }
            state.busy = true
            return true
        }
        if free { return }
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                guard state.busy else {
                    state.busy = true
                    return true
                }
                state.waiters.append(waiter)
                return false
            }
            if now { waiter.resume() }
        }
    }

    /// Takes the writer only when it is free and no one waits for it; `true` when taken (then
    /// paired with one ``release()``).
    func tryAcquire() -> Bool {
        state.withLock { state in
            guard !state.busy else { return false }
            state.busy = true
            return true
        }
    }

    /// Hands the writer to the longest waiter, or frees it.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
