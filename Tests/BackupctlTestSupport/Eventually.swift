import Foundation

/// Checks `condition` every `interval` until it holds or `seconds` pass (a bounded wait for a
/// state that only polling can see, such as a file another process writes); whether it held.
/// The task sleeps between checks: no thread is held.
public func eventually(
    seconds: Double, interval: Duration = .milliseconds(20), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        if Task.isCancelled { return false }
        try? await Task.sleep(for: interval)
    }
    return try await condition()
}
