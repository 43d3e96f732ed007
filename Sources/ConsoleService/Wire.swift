import BackupModel
import Foundation

/// The HTTP form of the service layer, shared by the server and its client.
///
/// `POST /v1/ops/<name>` with the operation as its JSON body. A plain operation answers its
/// output with 200, or `{"error": {"code", "kind", "message"}}` with the status of the error's
/// kind. A long job (``ConsoleOperation/streams``) answers 200 with JSON lines as it runs:
/// `{"progress": {…}}` lines, then one `{"result": …}` or `{"error": {…}}` line.
public enum Wire {
    public static let opsPrefix = "/v1/ops/"
    public static let tenantHeader = "Backupctl-Tenant"
    public static let jsonLines = "application/jsonl"

    /// The HTTP status for an error of this kind.
    public static func status(for kind: ConsoleError.Kind, code: String) -> Int {
        switch kind {
        case .permissionDenied:
            // No token, an unknown or revoked token: not authenticated; a token without the role: forbidden.
            ["missing_token", "invalid_token"].contains(code) ? 401 : 403
        case .notFound: 404
        case .invalidInput, .verificationFailed: 422
        case .conflict: 409
        case .remote: 502
        case .usage: 400
        case .internalError: 500
        }
    }

    public struct ErrorBody: Codable, Sendable, Equatable {
        public var code: String
        public var kind: String
        public var message: String

        public init(_ error: ConsoleError) {
            code = error.code
            kind = error.kind.rawValue
            message = error.message
        }

        /// The error as the client raises it; an unknown kind (a newer server) is internal.
        public var consoleError: ConsoleError {
            ConsoleError(ConsoleError.Kind(rawValue: kind) ?? .internalError, code: code, message)
        }
    }

    public struct ErrorDocument: Codable, Sendable {
        public var error: ErrorBody
        public init(_ error: ConsoleError) { self.error = ErrorBody(error) }
    }

    /// One line of a streamed answer.
    public struct Frame<Output: Codable & Sendable>: Codable, Sendable {
        public var progress: ProgressEvent?
        public var result: Output?
        public var error: ErrorBody?

        public init(progress: ProgressEvent? = nil, result: Output? = nil, error: ErrorBody? = nil) {
            self.progress = progress
            self.result = result
            self.error = error
        }
    }

    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
