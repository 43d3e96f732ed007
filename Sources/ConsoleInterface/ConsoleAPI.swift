import BackupModel
@_exported import ConsoleWire

/// The service layer: the one seam between the console's commands and everything behind them.
///
/// Two implementations answer it: ``LocalConsole`` runs the services in this process on a
/// store it opens (the embedded default, and the engine inside `backupctl serve`), and
/// `RemoteConsole` (module ConsoleClient) sends the same operations to a `backupctl serve`
/// over HTTP. Commands hold an `any ConsoleAPI` and cannot tell which one they have.
public protocol ConsoleAPI: Sendable {
    /// Runs one operation as `caller`. Long operations report through `progress`; cancelling
    /// the calling task stops them after the call they are in. A read returns only after its
    /// audit entry is committed, so its output may be shown at once.
    func perform<Op: ConsoleOperation>(
        _ operation: Op, as caller: Caller, progress: ProgressSink?
    ) async throws(ConsoleError) -> Op.Output
}

extension ConsoleAPI {
    public func perform<Op: ConsoleOperation>(_ operation: Op, as caller: Caller) async throws(ConsoleError)
        -> Op.Output
    {
        try await perform(operation, as: caller, progress: nil)
    }
}

/// Who calls: the operator's token and the tenant they chose (`--tenant`, `use`).
public struct Caller: Sendable {
    public var token: SecretBytes?
    public var tenant: String?
    /// The client's address as the server saw it (audited with refused credentials).
    public var address: String?

    public init(token: SecretBytes?, tenant: String?, address: String? = nil) {
        self.token = token
        self.tenant = tenant
        self.address = address
    }
}

public typealias ProgressSink = @Sendable (ProgressEvent) -> Void
