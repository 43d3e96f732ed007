import BackupModel
import ConsoleService
import Foundation
import Synchronization

/// A streamed job for the tests only (served by a test's ``ServerFixture``, never by
/// `backupctl serve`): it reports progress 1 of 2, waits for its gate to open — or for its
/// caller to go — and finishes (it waits at most 300 s, like ``SlowPlainOperation``).
struct SlowOperation: ConsoleOperation {
    static let name = "test.slow"
    static let streams = true
    var gate: String

    func run(_ context: any OperationContext) async throws(ConsoleError) -> Done {
        _ = try await context.operatorRecord()
        try context.progress(ProgressEvent(done: 1, total: 2))
        for _ in 0..<30_000 {
            if Gates.isOpen(gate) { break }
            if context.isCancelled {
                Gates.noteCancelled(gate)
                try context.checkCancelled()
            }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        guard Gates.isOpen(gate) else { throw .internalError("the gate of \(gate) never opened") }
        try context.progress(ProgressEvent(done: 2, total: 2))
        return Done()
    }

    static var operations: [String: any ConsoleOperation.Type] {
        ConsoleOperations.byName.merging([name: SlowOperation.self]) { $1 }
    }
}

/// A plain (not streamed) operation for the tests only: it notes that it started, then waits
/// for its gate to open (at most 300 s: a loaded machine must not end it before its test
/// opens it).
struct SlowPlainOperation: ConsoleOperation {
    static let name = "test.slowPlain"
    var gate: String

    func run(_ context: any OperationContext) async throws(ConsoleError) -> Done {
        _ = try await context.operatorRecord()
        Gates.noteStarted(gate)
        for _ in 0..<30_000 where !Gates.isOpen(gate) {
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        return Done()
    }

    static var operations: [String: any ConsoleOperation.Type] {
        ConsoleOperations.byName.merging([name: SlowPlainOperation.self]) { $1 }
    }
}

/// Stands in for the cleanup run in a test's server: two progress events, then done.
struct CleanupRunProbe: ConsoleOperation {
    static let name = "cleanup.run"
    static let streams = true

    func run(_ context: any OperationContext) async throws(ConsoleError) -> Done {
        _ = try await context.operatorRecord()
        try context.progress(ProgressEvent(done: 3, total: 7))
        try context.progress(ProgressEvent(done: 5, total: 7))
        return Done()
    }
}

/// Gates the tests open, and the jobs that saw their caller go.
enum Gates {
    private static let opened = Mutex<Set<String>>([])
    private static let cancelled = Mutex<Set<String>>([])
    private static let started = Mutex<Set<String>>([])

    static func open(_ gate: String) { _ = opened.withLock { $0.insert(gate) } }
    static func isOpen(_ gate: String) -> Bool { opened.withLock { $0.contains(gate) } }
    static func noteCancelled(_ gate: String) { _ = cancelled.withLock { $0.insert(gate) } }
    static func wasCancelled(_ gate: String) -> Bool { cancelled.withLock { $0.contains(gate) } }
    static func noteStarted(_ gate: String) { _ = started.withLock { $0.insert(gate) } }
    static func hasStarted(_ gate: String) -> Bool { started.withLock { $0.contains(gate) } }
}

/// Set once from any thread.
final class Flag: Sendable {
    private let raised = Mutex(false)
    func raise() { raised.withLock { $0 = true } }
    var isRaised: Bool { raised.withLock { $0 } }
}

/// Polls `condition` every 10 ms for at most `seconds`; whether it became true.
func eventually(seconds: Double = 30, _ condition: () async -> Bool) async -> Bool {
    for _ in 0..<max(1, Int(seconds * 100)) {
        if await condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    return await condition()
}
