import BackupModel

/// One call of the service layer: its input as a Codable value, its `Output`, and how it runs
/// in-process. The HTTP API is these same values as JSON: `POST /v1/ops/<name>` with the
/// operation as the body answers the output (see `openapi.json`).
public protocol ConsoleOperation: Codable, Sendable {
    associatedtype Output: Codable, Sendable

    /// The operation's stable name: the route and the OpenAPI operationId.
    static var name: String { get }

    /// Whether the operation is a long job: over HTTP its progress is streamed as it runs.
    static var streams: Bool { get }

    /// Whether the operation answers from a few indexed reads and one audit append, never
    /// holding its thread for long: `backupctl serve` runs it on the connection's event loop
    /// (no thread hop); every other operation runs on a pool beside the loops.
    static var isQuick: Bool { get }

    /// Runs the operation in-process. Checks the caller's role, audits, and returns only
    /// what the caller may see.
    func run(_ context: any OperationContext) async throws(ConsoleError) -> Output
}

extension ConsoleOperation {
    public static var streams: Bool { false }
    public static var isQuick: Bool { false }
}

/// An operation's output when it has nothing to say.
public struct Done: Codable, Sendable, Equatable {
    public init() {}
}
