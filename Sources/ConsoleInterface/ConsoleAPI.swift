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

    /// Runs `body` — reads made back to back for one caller, a script's read-ahead — with one
    /// access check around it instead of one per read, where this console can: the store's
    /// access version is read before and after, and the reads inside take the first reading as
    /// theirs. Since every change to tenants, operators, grants or tokens raises the version,
    /// the same reading after means it held for every read in between, exactly as if each had
    /// read it. `unchanged` is false otherwise: nothing `body` answered may be shown, and the
    /// reads are made again, each checked on its own.
    ///
    /// `operations` are the reads `body` is about to make, in order, where the caller knows
    /// them: a console may then read what they need together (the lookups' index rows, in one
    /// read of the store) as it checks their access together.
    func withOneAccessCheck<T: Sendable>(reading operations: [any ConsoleOperation], _ body: () async -> T) async
        -> (value: T, unchanged: Bool)
}

extension ConsoleAPI {
    /// Each read checks access on its own (a server checks every request): nothing to confirm.
    public func withOneAccessCheck<T: Sendable>(reading operations: [any ConsoleOperation], _ body: () async -> T)
        async -> (value: T, unchanged: Bool)
    {
        (await body(), true)
    }

    /// ``withOneAccessCheck(reading:_:)`` when the reads are not known ahead.
    public func withOneAccessCheck<T: Sendable>(_ body: () async -> T) async -> (value: T, unchanged: Bool) {
        await withOneAccessCheck(reading: [], body)
    }

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
