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
        case .rateLimited: 429
        case .configuration: 500
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

        /// The error as the client raises it; an unknown kind (a newer server) is internal. What
        /// came over the wire is bounded: a code that is not snake_case reads `server_error`, and
        /// the message is cut at 2,000 characters (it is escaped when shown).
        public var consoleError: ConsoleError {
            let snake =
                !code.isEmpty && code.count <= 64
                && code.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
            let text = message.count > 2000 ? String(message.prefix(2000)) + "…" : message
            return ConsoleError(
                ConsoleError.Kind(rawValue: kind) ?? .internalError, code: snake ? code : "server_error", text)
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

/// How far a long operation is: `done` of `total` (when known), with a short detail.
public struct ProgressEvent: Codable, Sendable, Equatable {
    public var done: Int
    public var total: Int?
    public var detail: String?

    public init(done: Int, total: Int? = nil, detail: String? = nil) {
        self.done = done
        self.total = total
        self.detail = detail
    }
}
