import BackupModel
import Foundation

/// Where the PostgreSQL store lives and how to reach it, parsed from a libpq-style URL:
/// `postgres://user[:password]@host[:port]/db?sslmode=…&sslrootcert=FILE&application_name=…&pool_size=N`
/// (`postgresql://` too).
///
/// `sslmode` is `disable`, `require` (encrypted, the server's certificate not verified) or
/// `verify-full` (chain and host name verified, against `sslrootcert` when given, else the system's
/// roots). It defaults to `disable`, which only a loopback host may use: any other host must say
/// `require` or `verify-full`. The password comes from the URL, else `PGPASSWORD`, else a passfile
/// (`passfile=FILE`, `PGPASSFILE`, or `~/.pgpass`), and is never printed: ``redacted`` (also the
/// `description`) is the URL without it, for errors and logs.
public struct PostgresStoreConfiguration: Sendable, CustomStringConvertible, CustomReflectable {
    /// How the connection is encrypted.
    public enum SSLMode: String, Sendable, CaseIterable {
        case disable
        case require
        case verifyFull = "verify-full"
    }

    public let host: String
    public let port: Int
    public let username: String
    public let database: String
    public let sslMode: SSLMode
    /// A PEM file of CA certificates to verify the server against (`verify-full` only).
    public let sslRootCert: String?
    /// Sent to the server (`pg_stat_activity.application_name`).
    public let applicationName: String
    /// The most connections the client pool opens.
    public let poolSize: Int
    /// How long one statement of the shared store rules (and a lookup on the hot connection)
    /// may wait for its answer before its connection is closed and the caller gets
    /// `store_timeout` (`query_timeout` in the URL, seconds, default 30; 0 waits for good). A
    /// database that stops answering (a hung host, a failover that left the connection open)
    /// then fails the requests behind it instead of holding them for good.
    public let queryTimeoutSeconds: Int
    /// The password, from wherever it came; never part of a description.
    let password: String?

    /// The longest URL accepted.
    static let maxURLLength = 4096
    /// The largest `pool_size` accepted.
    static let maxPoolSize = 200
    /// The largest `query_timeout` accepted (a day), and the default.
    static let maxQueryTimeoutSeconds = 86_400
    static let defaultQueryTimeoutSeconds = 30

    /// A database URL that cannot be used as given: a configuration mistake to fix, not retry
    /// (exit 78, as a bad `--db` path is).
    static func invalidURL(_ message: String) -> ConsoleError {
        ConsoleError(.configuration, code: "invalid_url", message)
    }

    /// Parses `url`, taking the password from `environment` (`PGPASSWORD`, `PGPASSFILE`, `HOME`)
    /// when the URL has none.
    /// - Throws: ``ConsoleError`` `invalid_url` (configuration, exit 78), one sentence naming the
    ///   URL without its password, when the URL is malformed, names an unknown parameter, or is not
    ///   on loopback without TLS.
    public init(
        url: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConsoleError) {
        let shown = Self.redact(url)
        func bad(_ why: String) -> ConsoleError { Self.invalidURL("The database URL \(shown) \(why).") }

        guard url.utf8.count <= Self.maxURLLength else {
            throw Self.invalidURL("The database URL is longer than \(Self.maxURLLength) bytes.")
        }
        guard !Self.hasControlCharacter(url) else {
            throw Self.invalidURL("The database URL contains a control character.")
        }
        guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased(),
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw bad("is not a postgres:// URL (percent-encode special characters in the user and password)")
        }
        let decoded =
            [parts.user, parts.host, parts.path].compactMap { $0 }
            + (parts.queryItems ?? []).flatMap {
                [$0.name, $0.value ?? ""]
            }
        guard !decoded.contains(where: Self.hasControlCharacter) else {
            throw bad("has a percent-encoded control character")
        }
        guard let user = parts.user, !user.isEmpty else { throw bad("names no user") }
        var host = parts.host ?? ""
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw bad("names no host") }
        guard !host.contains(",") else { throw bad("names several hosts; give one") }
        let port = parts.port ?? 5432
        guard (1...65535).contains(port) else { throw bad("has a port outside 1-65535") }
        var database = parts.path.hasPrefix("/") ? String(parts.path.dropFirst()) : parts.path
        if database.isEmpty { database = user }
        guard !database.contains("/") else { throw bad("has a path that is not one database name") }

        let options = try Self.options(parts.queryItems ?? [], bad: bad)
        let sslMode = options.sslMode ?? .disable
        if sslMode == .disable, !Self.isLoopback(host) {
            throw bad("is not on this machine: add sslmode=require or sslmode=verify-full (TLS to the database)")
        }
        if options.sslRootCert != nil, sslMode != .verifyFull {
            throw bad("gives sslrootcert without sslmode=verify-full")
        }

        self.host = host
        self.port = port
        self.username = user
        self.database = database
        self.sslMode = sslMode
        self.sslRootCert = options.sslRootCert
        self.applicationName = options.applicationName ?? "backupctl"
        self.poolSize = options.poolSize ?? 10
        self.queryTimeoutSeconds = options.queryTimeoutSeconds ?? Self.defaultQueryTimeoutSeconds
        if let inURL = parts.password {
            password = inURL
        } else if let fromEnvironment = environment["PGPASSWORD"] {
            password = fromEnvironment
        } else {
            password = try PassFile.password(
                explicit: options.passFile, environment: environment,
                host: host, port: port, database: database, user: user)
        }
    }

    /// The URL without its password, and of its parameters only `sslmode` and `sslrootcert`: safe
    /// for errors and logs.
    public var redacted: String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        var query = ["sslmode=\(sslMode.rawValue)"]
        if let sslRootCert { query.append("sslrootcert=\(sslRootCert)") }
        return "postgres://\(username)\(password == nil ? "" : ":***")@\(hostPart):\(port)/\(database)?"
            + query.joined(separator: "&")
    }

    public var description: String { redacted }

    /// Leaves the password out of `dump` and debugger views.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "host": host, "port": port, "username": username, "database": database, "sslMode": sslMode,
                "sslRootCert": sslRootCert as Any, "applicationName": applicationName, "poolSize": poolSize,
                "queryTimeoutSeconds": queryTimeoutSeconds,
            ])
    }

    /// `host:port`, for messages about reaching the server.
    public var endpoint: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Whether `text` is a `postgres://` or `postgresql://` URL rather than a SQLite file path.
    public static func isURL(_ text: String) -> Bool {
        let lowered = text.prefix(14).lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    /// Whether a `postgres://` URL carries a password in its userinfo (which `--db` must not:
    /// arguments show in `ps`).
    public static func hasPassword(_ url: String) -> Bool {
        guard isURL(url) else { return false }
        if let parts = URLComponents(string: url) { return parts.password != nil }
        // Unparseable: anything after a `:` in the userinfo may be one.
        guard let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].lastIndex(of: "@") else {
            return false
        }
        let afterScheme = url[scheme.upperBound...]
        return afterScheme[..<at].contains(":")
    }

    /// `url` without its password when it is a `postgres://` URL; other text as it is.
    public static func displayed(_ url: String) -> String { isURL(url) ? redact(url) : url }

    static func hasControlCharacter(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// Whether `host` is this machine without asking DNS: `localhost`, 127.0.0.0/8 or `::1`.
    static func isLoopback(_ host: String) -> Bool {
        let lowered = host.lowercased()
        if lowered == "localhost" || lowered == "::1" || lowered == "0:0:0:0:0:0:0:1" { return true }
        let octets = lowered.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    /// A raw URL with anything that may be a password replaced, for errors about URLs that did not
    /// parse: the userinfo ends at the LAST `@` (a password may hold an unencoded `/`, `?` or `@`),
    /// only the user name before its first `:` is kept, and query parameters keep their names only.
    static func redact(_ url: String) -> String {
        var text = Substring(url)
        var head = ""
        if let at = text.lastIndex(of: "@") {
            let afterScheme = text.range(of: "://").map(\.upperBound).flatMap { $0 <= at ? $0 : nil }
            let userinfo = text[(afterScheme ?? text.startIndex)..<at]
            let user = userinfo.prefix { !":/?@".contains($0) }
            head = String(text[..<userinfo.startIndex]) + user + (user.count < userinfo.count ? ":***" : "")
            text = text[at...]
        }
        guard let query = text.firstIndex(of: "?") else { return head + text }
        let names = text[text.index(after: query)...].split(separator: "&").map { $0.prefix { $0 != "=" } }
        return head + text[...query] + names.map { "\($0)=…" }.joined(separator: "&")
    }
}
