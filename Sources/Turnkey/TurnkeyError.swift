import BackupModel
import Foundation

/// A failed Turnkey call, classified so the retry loop and the cleanup engine can act on it.
///
/// Classification reads `details[].turnkeyErrorCode` first and the message second, because
/// the HTTP status alone cannot tell a rate limit from a quota (both 429) or a missing key from
/// an expired session (both 401). Converts to a ``ConsoleError`` of kind `.remote` (exit 2).
public struct TurnkeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, at the granularity that decides retry and signer fallback.
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// 429 `RATE_LIMIT_EXCEEDED`: transient, retried.
        case rateLimited
        /// 429 for a quota or plan limit: not transient, never retried.
        case quotaExceeded
        /// 401 `PUBLIC_KEY_NOT_FOUND`: the signer is not a user of that org; try the next signer.
        case publicKeyNotFound
        /// Another 401: a bad or stale stamp.
        case unauthenticated
        /// 403: the signer is known but its policy does not allow the activity.
        case forbidden
        /// 404 `ORGANIZATION_NOT_FOUND`: the org is gone.
        case organizationNotFound
        /// Another 4xx: the request itself is wrong.
        case badRequest
        /// 5xx: transient, retried.
        case serverError
        /// No connection, reset, or an unreadable answer: transient, retried.
        case transport
        /// No answer in time: transient, retried.
        case timeout
        /// The run's retry budget is spent: an outage, stop the run.
        case retryBudgetExhausted
        /// The caller stopped waiting.
        case cancelled
    }

    public let kind: Kind
    /// The HTTP status, when there was an answer.
    public let status: Int?
    /// `details[].turnkeyErrorCode`, when Turnkey gave one.
    public let turnkeyErrorCode: String?
    /// Turnkey's message or our description; never contains a secret.
    public let message: String
    /// `Retry-After`, in milliseconds, when the answer carried one.
    public var retryAfterMillis: Int64?
    /// Attempts made before giving up (set by the retry loop).
    public var attempts: Int

    public init(
        _ kind: Kind, status: Int? = nil, turnkeyErrorCode: String? = nil, message: String,
        retryAfterMillis: Int64? = nil, attempts: Int = 1
    ) {
        self.kind = kind
        self.status = status
        self.turnkeyErrorCode = turnkeyErrorCode
        self.message = message
        self.retryAfterMillis = retryAfterMillis
        self.attempts = attempts
    }

    /// Whether the retry policy may try again: rate limits, 5xx, transport errors and timeouts.
    public var isTransient: Bool {
        switch kind {
        case .rateLimited, .serverError, .transport, .timeout: true
        default: false
        }
    }

    /// One operator-facing line, e.g. `503 UNAVAILABLE: sandbox outage (after 3 attempts)`.
    public var description: String {
        summary + (attempts > 1 ? " (after \(attempts) attempts)" : "")
    }

    /// ``description`` without the attempts (a message that names them once, itself).
    public var summary: String {
        var parts: [String] = []
        if let status { parts.append("\(status)") }
        if let turnkeyErrorCode { parts.append(turnkeyErrorCode) }
        let head = parts.isEmpty ? kind.rawValue : parts.joined(separator: " ")
        return "\(head): \(message)"
    }

    /// The same failure as the console's error type (exit 2), with `context` in front.
    public func consoleError(_ context: String) -> ConsoleError {
        let code: String
        switch kind {
        case .cancelled: return ConsoleError(.conflict, code: "cancelled", "\(context): \(description)")
        case .retryBudgetExhausted: code = "turnkey_unavailable"
        case .publicKeyNotFound: code = "turnkey_public_key_not_found"
        case .organizationNotFound: code = "turnkey_organization_not_found"
        case .rateLimited, .quotaExceeded: code = "turnkey_rate_limited"
        case .unauthenticated, .forbidden: code = "turnkey_permission_denied"
        default: code = "turnkey_error"
        }
        return ConsoleError(.remote, code: code, "\(context): \(description)")
    }

    /// The Turnkey message that marks a missing signer.
    public static let publicKeyNotFoundMessage = "could not find public key in organization or its parent organization"

    /// Classifies an error answer from its status, `details[].turnkeyErrorCode` and message.
    public static func classify(status: Int, body: [UInt8], retryAfterMillis: Int64?) -> TurnkeyError {
        let payload = try? JSONDecoder().decode(TurnkeyErrorPayload.self, from: Data(body))
        let code = payload?.details?.lazy.compactMap(\.turnkeyErrorCode).first
        let message = payload?.message ?? String(decoding: body.prefix(200), as: UTF8.self)
        let lowered = message.lowercased()
        let kind: Kind
        switch status {
        case 429:
            kind = Self.classify429(code: code, message: lowered)
        case 401:
            kind =
                code == "PUBLIC_KEY_NOT_FOUND"
                    || (code == nil && lowered.contains(publicKeyNotFoundMessage))
                ? .publicKeyNotFound : .unauthenticated
        case 403: kind = .forbidden
        case 404:
            kind =
                code == "ORGANIZATION_NOT_FOUND" || (code == nil && lowered.contains("organization not found"))
                ? .organizationNotFound : .badRequest
        case 408, 504: kind = .timeout
        case 500..<600: kind = .serverError
        default: kind = .badRequest
        }
        return TurnkeyError(
            kind, status: status, turnkeyErrorCode: code, message: message, retryAfterMillis: retryAfterMillis)
    }

    /// A 429 is a rate limit unless its code or message says quota or limit of the plan.
    private static func classify429(code: String?, message: String) -> Kind {
        if let code {
            if code == "RATE_LIMIT_EXCEEDED" || code.contains("RATE_LIMIT") { return .rateLimited }
            if code.contains("QUOTA") || code.contains("LIMIT") { return .quotaExceeded }
        }
        if message.contains("quota") || message.contains("plan limit") || message.contains("usage limit") {
            return .quotaExceeded
        }
        return .rateLimited
    }
}

/// Turnkey's error body: `{"code": <int>, "message": "…", "details": [{"turnkeyErrorCode": "…"}]}`.
public struct TurnkeyErrorPayload: Codable, Sendable, Equatable {
    public struct Detail: Codable, Sendable, Equatable {
        public var turnkeyErrorCode: String?
        public init(turnkeyErrorCode: String?) { self.turnkeyErrorCode = turnkeyErrorCode }
    }

    public var code: Int?
    public var message: String?
    public var details: [Detail]?

    public init(code: Int, message: String, turnkeyErrorCode: String?) {
        self.code = code
        self.message = message
        details = turnkeyErrorCode.map { [Detail(turnkeyErrorCode: $0)] } ?? []
    }
}
