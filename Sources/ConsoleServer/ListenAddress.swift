import BackupModel

/// Where `backupctl serve` listens: `HOST:PORT` or `[IPv6]:PORT` (port 0 picks a free one).
public struct ListenAddress: Sendable, Equatable {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `--listen`.
    /// - Throws: `usage` when it is not `HOST:PORT` with a port in 0…65535.
    public init(parsing text: String) throws(ConsoleError) {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw Self.invalid(text) }
            portPart = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw Self.invalid(text) }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            guard !hostPart.contains(":") else { throw Self.invalid(text) }
        }
        guard !hostPart.isEmpty, hostPart.count <= 253, let port = Int(portPart), (0...65535).contains(port) else {
            throw Self.invalid(text)
        }
        host = String(hostPart)
        self.port = port
    }

    private static func invalid(_ text: String) -> ConsoleError {
        .usage(
            "--listen must be HOST:PORT (e.g. 127.0.0.1:8443, [::1]:8443), got \(SecretShape.excerpt(text, limit: 80))."
        )
    }

    /// Whether only this machine can connect: 127.0.0.0/8, ::1 or `localhost`.
    public var isLoopback: Bool {
        if host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ UInt8($0) != nil }) else { return false }
        return octets[0] == "127"
    }

    /// The host as it goes in a URL (`[::1]` for IPv6).
    public var urlHost: String { host.contains(":") ? "[\(host)]" : host }
}
