import BackupModel
import NIOCore

/// How long each phase of a connection may take, and how many connections the server and one
/// client address may hold. Every phase before a request is authenticated is bounded, so a
/// client without a token cannot hold a slot for longer than ``headerTimeout``.
public struct ConnectionLimits: Sendable, Equatable {
    /// Open connections at once (`--max-connections`).
    public var maxConnections: Int
    /// Open connections from one address (`--max-connections-per-address`).
    public var maxPerAddress: Int
    /// From a connection's first byte (or its opening, or the end of the previous response's
    /// idle wait) to a whole request head, TLS handshake included.
    public var headerTimeout: TimeAmount
    /// From a request head to the end of its body.
    public var bodyTimeout: TimeAmount
    /// Between requests on a kept connection.
    public var idleTimeout: TimeAmount
    /// How long a response may wait for a client that does not read it.
    public var writeTimeout: TimeAmount

    public init(
        maxConnections: Int, maxPerAddress: Int? = nil, headerTimeout: TimeAmount = .seconds(10),
        bodyTimeout: TimeAmount = .seconds(30), idleTimeout: TimeAmount = .seconds(60),
        writeTimeout: TimeAmount = .seconds(30)
    ) {
        self.maxConnections = maxConnections
        self.maxPerAddress = maxPerAddress ?? Self.defaultPerAddress(maxConnections)
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.writeTimeout = writeTimeout
    }

    /// A quarter of the server's cap, at least 4 (at most the cap): a team behind one NAT still
    /// has room, and one host cannot take more than a quarter of the slots.
    public static func defaultPerAddress(_ maxConnections: Int) -> Int {
        min(max(1, maxConnections), max(4, maxConnections / 4))
    }

    /// Refuses caps and timeouts out of range, naming the option.
    func validate() throws(ConsoleError) {
        guard (1...65_536).contains(maxConnections) else {
            throw .usage("--max-connections must be 1…65536, got \(maxConnections).")
        }
        guard (1...maxConnections).contains(maxPerAddress) else {
            throw .usage("--max-connections-per-address must be 1…\(maxConnections), got \(maxPerAddress).")
        }
        let timeouts: [(String, TimeAmount)] = [
            ("--header-timeout", headerTimeout), ("--body-timeout", bodyTimeout), ("--idle-timeout", idleTimeout),
            ("--write-timeout", writeTimeout),
        ]
        for (option, value) in timeouts where !(TimeAmount.milliseconds(100)...TimeAmount.hours(1)).contains(value) {
            throw .usage("\(option) must be 0.1…3600 seconds.")
        }
    }
}
