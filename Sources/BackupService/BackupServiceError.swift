import BackupModel

/// A failed call to the Backup Service, classified the way the console must act on it.
///
/// The app's own refusals keep the service's code (`jwt_error`, `not_found`, …). The HTTP
/// framework's plain-text answers, timeouts and transport failures get console codes that say
/// which of them it was. ``consoleError`` maps each to the exit code the command contract gives:
/// a refusal is 1, a service that failed or could not be reached is 2.
public struct BackupServiceError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The app answered with its JSON envelope.
        case service(status: Int, code: String)
        /// The HTTP framework answered in plain text (400, 408, 413, 415, 422, …).
        case framework(status: Int)
        /// No answer within the deadline.
        case timeout
        /// The connection failed or was dropped.
        case transport
        /// An answer the console cannot read (wrong status, not the expected JSON).
        case malformedResponse(status: Int)
        case cancelled
    }

    public let kind: Kind
    /// Operator-facing detail; anything the remote sent is bounded and escaped.
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    /// The service's code, when the app itself answered.
    public var serviceCode: String? {
        if case .service(_, let code) = kind { return code }
        return nil
    }

    /// True when the request may never have reached the service, or its answer was lost: the
    /// outcome of a non-idempotent call is unknown.
    public var outcomeUnknown: Bool {
        switch kind {
        case .timeout, .transport, .cancelled: true
        case .framework(let status): status == 408
        default: false
        }
    }

    /// True when the service answered a refusal of its own (a 4xx other than 408): the call
    /// was decided and changed nothing there. A 5xx is not: the service may have failed half-way.
    public var definiteRefusal: Bool {
        switch kind {
        case .service(let status, _): (400..<500).contains(status) && status != 408
        case .framework(let status): (400..<500).contains(status) && status != 408
        default: false
        }
    }

    /// Whether a retry of an idempotent call may help.
    var retryable: Bool {
        switch kind {
        case .timeout, .transport: true
        case .framework(let status): status == 408 || status >= 500
        case .service(let status, _): status >= 500
        case .malformedResponse(let status): status >= 500
        case .cancelled: false
        }
    }

    /// The console error for this failure: the service's code with exit 1 for its refusals,
    /// exit 2 for 5xx, timeouts and transport failures.
    public var consoleError: ConsoleError {
        switch kind {
        case .service(let status, let code):
            if status >= 500 { return ConsoleError(.remote, code: code, message) }
            if status == 404 { return ConsoleError(.notFound, code: code, message) }
            switch code {
            case "invalid_backup_account_id", "invalid_signature":
                return ConsoleError(.invalidInput, code: code, message)
            default:
                return ConsoleError(.verificationFailed, code: code, message)
            }
        case .framework(let status):
            switch status {
            case 408: return ConsoleError(.remote, code: "backup_service_timeout", message)
            case 413: return ConsoleError(.invalidInput, code: "backup_service_body_too_large", message)
            case 415: return ConsoleError(.invalidInput, code: "backup_service_unsupported_media_type", message)
            case 422: return ConsoleError(.invalidInput, code: "backup_service_unprocessable", message)
            case 400..<500: return ConsoleError(.invalidInput, code: "backup_service_bad_request", message)
            default: return ConsoleError(.remote, code: "backup_service_error", message)
            }
        case .timeout: return ConsoleError(.remote, code: "backup_service_timeout", message)
        case .transport: return ConsoleError(.remote, code: "backup_service_unavailable", message)
        case .malformedResponse: return ConsoleError(.remote, code: "backup_service_bad_response", message)
        case .cancelled: return ConsoleError(.remote, code: "cancelled", message)
        }
    }

    /// Text from the remote side made safe for one line: control characters escaped, bounded.
    static func quote(_ text: String, limit: Int = 200) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if out.unicodeScalars.count >= limit {
                out += "…"
                break
            }
            switch scalar.value {
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0..<0x20, 0x7F..<0xA0: out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
