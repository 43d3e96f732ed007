import BackupModel
import Foundation
import NIOSSL
import PostgresNIO
import _ConnectionPoolModule

/// Turns what postgres-nio throws into one operator-facing ``ConsoleError`` sentence.
///
/// A unique violation is `conflict`, a foreign-key violation `not_found` and another constraint
/// `constraint_failed`, as in the SQLite store; a server that cannot be reached (refused, timed
/// out, TLS failed, shutting down) is `database_unavailable` (exit 2, a remote system) naming
/// `host:port`; a refused login is `database_auth_failed`; anything else `internal_error`.
/// Messages carry the server's own message at most: never SQL, bound values or the password.
enum PostgresErrors {
    /// The hot-path connection closed under a statement (the server restarted or went away).
    struct HotConnectionClosed: Error {}

    /// No pooled connection could be had within the store's `query_timeout`
    /// (``PostgresStoreDatabase/leased(_:)``).
    struct LeaseTimedOut: Error {
        var seconds: Int
    }

    /// A statement got no answer within the store's `query_timeout`, and its connection was
    /// closed under it (``PostgresStoreDatabase/bounded(_:committing:_:)``).
    struct QueryTimedOut: Error {
        var seconds: Int
        /// It was the transaction's `COMMIT`: the change may or may not have been made.
        var committing: Bool
    }

    static func map(_ error: any Error, while what: String, at endpoint: String) -> ConsoleError {
        switch error {
        case let error as ConsoleError:
            return error
        case is HotConnectionClosed:
            return unavailable(endpoint, "the connection closed")
        case let timeout as LeaseTimedOut:
            return ConsoleError(
                .remote, code: "store_timeout",
                "No connection to PostgreSQL at \(endpoint) within \(timeout.seconds) s while \(what) (the database does not answer, or every pooled connection is busy). (query_timeout in the database URL sets the wait.)"
            )
        case let timeout as QueryTimedOut:
            return ConsoleError(
                .remote, code: "store_timeout",
                "PostgreSQL at \(endpoint) did not answer within \(timeout.seconds) s while \(what), so its connection was closed"
                    + (timeout.committing ? "; the change may or may not have been committed." : ".")
                    + " (query_timeout in the database URL sets the wait.)")
        case let error as PostgresTransactionError:
            guard let inner = error.closureError ?? error.beginError ?? error.commitError else {
                return .internalError("The PostgreSQL store failed while \(what): the transaction failed.")
            }
            return map(inner, while: what, at: endpoint)
        case let error as PSQLError:
            return map(error, while: what, at: endpoint)
        case let error as ConnectionPoolError where error == .connectionCreationCircuitBreakerTripped:
            return unavailable(endpoint, "no connection could be opened for a minute")
        default:
            return .internalError("The PostgreSQL store failed while \(what): \(reason(error)).")
        }
    }

    private static func map(_ error: PSQLError, while what: String, at endpoint: String) -> ConsoleError {
        switch error.code {
        case .server:
            return server(error, while: what, at: endpoint)
        case .connectionError, .serverClosedConnection, .uncleanShutdown, .sslUnsupported, .failedToAddSSLHandler,
            .receivedUnencryptedDataAfterSSLRequest:
            if let underlying = error.underlying, isTrustFailure(underlying) {
                // Not a failure of the moment: the configuration does not trust the server (exit 78).
                return ConsoleError(
                    .remote, code: "tls_untrusted", "Cannot reach PostgreSQL at \(endpoint): \(reason(underlying)).")
            }
            return unavailable(endpoint, error.underlying.map(reason) ?? connectionReason(error.code))
        case .authMechanismRequiresPassword:
            return ConsoleError(
                .remote, code: "database_auth_failed",
                "PostgreSQL at \(endpoint) wants a password: put it in the URL, PGPASSWORD or a passfile.")
        case .unsupportedAuthMechanism, .saslError:
            return ConsoleError(
                .remote, code: "database_auth_failed",
                "PostgreSQL at \(endpoint) refused the login: its authentication method is not supported.")
        case .poolClosed:
            return .internalError("The PostgreSQL store was used while \(what) after it was shut down.")
        default:
            return .internalError("The PostgreSQL store failed while \(what): \(error.code).")
        }
    }

    /// Classes of SQLSTATE: 23 integrity, 28 authorization, 3D no such database, 57P shutdown, 08 connection.
    private static func server(_ error: PSQLError, while what: String, at endpoint: String) -> ConsoleError {
        let state = error.serverInfo?[.sqlState] ?? ""
        let message = error.serverInfo?[.message] ?? "SQLSTATE \(state)"
        switch state {
        case "23505":
            return ConsoleError(
                .conflict, code: "conflict", "The console store refused \(what): the record already exists.")
        case "23503":
            return .notFound(
                "The console store refused \(what): it refers to a tenant, operator or backup that does not exist.")
        case _ where state.hasPrefix("23"):
            return .invalid("constraint_failed", "The console store refused \(what): \(message).")
        case "28P01", "28000":
            return ConsoleError(
                .remote, code: "database_auth_failed", "PostgreSQL at \(endpoint) refused the login: \(message).")
        case "3D000":
            // The server answered: the database named in the URL does not exist (a mistake to fix).
            return ConsoleError(
                .configuration, code: "database_not_found", "PostgreSQL at \(endpoint): \(message).")
        case _ where state.hasPrefix("57P") || state.hasPrefix("08") || state == "53300":
            return unavailable(endpoint, message)
        default:
            return .internalError("The PostgreSQL store failed while \(what): \(message).")
        }
    }

    static func unavailable(_ endpoint: String, _ reason: String) -> ConsoleError {
        ConsoleError(.remote, code: "database_unavailable", "Cannot reach PostgreSQL at \(endpoint): \(reason).")
    }

    private static func connectionReason(_ code: PSQLError.Code) -> String {
        switch code {
        case .sslUnsupported: "the server does not offer TLS"
        case .uncleanShutdown, .serverClosedConnection: "the server closed the connection"
        default: "the connection failed"
        }
    }

    /// Whether `error` is a TLS failure to trust the server (its chain or its host name).
    static func isTrustFailure(_ error: any Error) -> Bool {
        if let error = error as? NIOConnectionError {
            return error.connectionErrors.contains { isTrustFailure($0.error) }
        }
        if let error = error as? NIOSSLExtraError, error == .failedToValidateHostname { return true }
        return (error is NIOSSLError || error is BoringSSLError) && "\(error)".contains("CERTIFICATE_VERIFY_FAILED")
    }

    /// A short reason for a network or TLS error: `connection refused`, `timed out`, a TLS failure.
    static func reason(_ error: any Error) -> String {
        switch error {
        case let error as NIOConnectionError:
            return error.connectionErrors.first.map { reason($0.error) } ?? "no address to connect to"
        case let error as IOError:
            return String(cString: strerror(error.errnoCode)).lowercased()
        case let error as ChannelError:
            if case .connectTimeout = error { return "timed out" }
            return "\(error)"
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            return "TLS failed: the server's certificate does not name this host"
        case is NIOSSLError, is NIOSSLExtraError, is BoringSSLError:
            if "\(error)".contains("CERTIFICATE_VERIFY_FAILED") {
                return "TLS failed: the server's certificate does not lead to a trusted root (sslrootcert)"
            }
            return "TLS failed (\(error))"
        default:
            return String(describing: type(of: error))
        }
    }
}
