import BackupModel
import NIOSSL
import PostgresNIO

extension PostgresStoreConfiguration {
    /// The pool's configuration: endpoint, credentials, TLS, pool size and application name.
    public var clientConfiguration: PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database,
            tls: sslMode == .disable ? .disable : .require(tlsConfiguration))
        configuration.options.maximumConnections = poolSize
        configuration.options.additionalStartupParameters = [("application_name", applicationName)]
        return configuration
    }

    /// The same settings for one connection outside the pool (``PostgresStoreDatabase`` opens one to
    /// check the server answers before it starts the pool).
    /// - Throws: ``ConsoleError`` `invalid_ca_file` (exit 78) when the TLS settings cannot be
    ///   loaded (an unreadable `sslrootcert`).
    func connectionConfiguration() throws(ConsoleError) -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS
        if sslMode == .disable {
            tls = .disable
        } else {
            do {
                tls = .require(try NIOSSLContext(configuration: tlsConfiguration))
            } catch {
                throw ConsoleError(
                    .configuration, code: "invalid_ca_file", "Cannot load the TLS settings of \(redacted): \(error).")
            }
        }
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls)
        configuration.options.additionalStartupParameters = [("application_name", applicationName)]
        return configuration
    }

    /// `require`: encrypted, any certificate accepted. `verify-full`: the chain must lead to
    /// `sslrootcert` (or a system root) and the certificate must name the host (or its IP address).
    var tlsConfiguration: TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        switch sslMode {
        case .disable, .require:
            tls.certificateVerification = .none
        case .verifyFull:
            tls.certificateVerification = .fullVerification
            if let sslRootCert { tls.trustRoots = .file(sslRootCert) }
        }
        return tls
    }
}
