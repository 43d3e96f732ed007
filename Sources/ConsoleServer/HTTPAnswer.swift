import BackupModel
import ConsoleService
import Foundation
import Hummingbird
import NIOCore

/// Every answer of `backupctl serve` is made here: its status, its body and the headers that
/// go with the status. Keeping statuses in one place keeps the API honest (and merges small).
///
/// Each answer carries `Cache-Control: no-store` (answers hold tokens and user data) and the
/// request's `X-Request-Id`; a 401 says how to authenticate (`WWW-Authenticate`), a 429 when
/// to come back (`Retry-After`), a 405 what the route takes (`Allow`).
enum HTTPAnswer {
    /// `X-Request-Id` (not a standard field: its name is checked, never force-unwrapped).
    static let requestIdField = HTTPFields.Element.Name("X-Request-Id")

    /// The largest operation body accepted (413 past it).
    static let maxBody = 1 << 20

    /// The caller's `X-Request-Id` when it is a plain token (1–128 of `A-Z a-z 0-9 . _ : -`)
    /// that does not look like a secret (an operator token, a key: ``SecretShape``, whole keys
    /// only, so a 32-digit trace id stays), else a new random one: a hostile id, or a token
    /// pasted in the wrong header, never reaches the log or the audit chain, which cannot be
    /// edited.
    static func requestId(_ given: String?) -> String {
        if let given, (1...128).contains(given.utf8.count),
            given.utf8.allSatisfy({ byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || [0x2E, 0x5F, 0x3A, 0x2D].contains(byte)
            }),
            !SecretShape.appears(in: given, halfKeys: false),
            // Nor a run of 64 hex digits or more (a key, or two, written out as one id).
            !given.split(whereSeparator: { !$0.isHexDigit }).contains(where: { $0.count >= 64 })
        {
            return given
        }
        // Twelve random bytes from two draws (each draw is a getrandom call), as 24 hex digits.
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = UInt32(truncatingIfNeeded: generator.next() as UInt64)
        return withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { Hex.encode($0) }
    }

    /// The headers every answer gets, and those its status calls for.
    static func finish(_ response: inout Response, requestId: String, retryAfterSeconds: Int64) {
        response.headers[.cacheControl] = "no-store"
        if let requestIdField { response.headers[requestIdField] = requestId }
        switch response.status.code {
        case 401: response.headers[.wwwAuthenticate] = #"Bearer realm="backupctl""#
        // The limiter that refused it said when (``RequestHandler``); the window is the fallback.
        case 429 where response.headers[.retryAfter] == nil:
            response.headers[.retryAfter] = String(retryAfterSeconds)
        default: break
        }
    }

    static func json(_ status: Int, _ body: Data, contentType: String = "application/json") -> Response {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        return Response(
            status: .init(code: status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// `{"error": {code, kind, message}}` with the status of its kind (or `status`).
    static func error(_ error: ConsoleError, status: Int? = nil) -> Response {
        let body = (try? encode(Wire.ErrorDocument(error))) ?? Data(#"{"error":{"code":"internal_error"}}"#.utf8)
        return json(status ?? Wire.status(for: error.kind, code: error.code), body)
    }

    /// An operation's own refusal. A usage error raised by the operation (a value out of range,
    /// a missing option) concerns a body that was well-formed JSON of its schema: 422, not the
    /// 400 of a body that could not be read.
    static func refusal(_ error: ConsoleError) -> Response {
        Self.error(error, status: error.kind == .usage ? 422 : nil)
    }

    /// 405 with the methods the route takes.
    static func wrongMethod(_ path: Substring, allow: String) -> Response {
        var response = error(.usage("\(SecretShape.excerpt(path, limit: 64)) takes \(allow)."), status: 405)
        response.headers[.allow] = allow
        return response
    }

    /// 415 unless the body is declared JSON (`application/json`, parameters allowed).
    static func unsupportedMediaType(_ contentType: String?) -> Response? {
        // Every operation asks: the usual header is read byte by byte, without new strings.
        if let contentType, isJSON(contentType.utf8) { return nil }
        let type = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard type != "application/json" else { return nil }
        return error(
            ConsoleError(
                .usage, code: "unsupported_media_type",
                "An operation's body must be application/json, got \(type.map { String($0.prefix(64)) } ?? "none")."),
            status: 415)
    }

    /// Whether a `Content-Type` is `application/json` in any case, before any parameters, with
    /// spaces or tabs around it (what the general check accepts, for ASCII headers).
    static func isJSON(_ value: String.UTF8View) -> Bool {
        var type = value[...]
        if let semicolon = type.firstIndex(of: UInt8(ascii: ";")) { type = type[..<semicolon] }
        while let first = type.first, first == 0x20 || first == 0x09 { type = type.dropFirst() }
        while let last = type.last, last == 0x20 || last == 0x09 { type = type.dropLast() }
        return asciiCaseInsensitive(type, equals: "application/json")
    }

    /// Whether `bytes` spell `lowercase` (ASCII, in lower case) with ASCII letters in any case.
    static func asciiCaseInsensitive(_ bytes: some Collection<UInt8>, equals lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = UnsafeBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount)
        return zip(bytes, expected).allSatisfy { byte, want in
            (0x41...0x5A).contains(byte) ? byte + 0x20 == want : byte == want
        }
    }

    static let tooLarge = error(
        ConsoleError(.usage, code: "body_too_large", "The body is over \(maxBody) bytes."), status: 413)

    static func encode(_ value: some Encodable) throws(ConsoleError) -> Data {
        do {
            return try Wire.encoder().encode(value)
        } catch {
            throw .internalError("Could not encode the answer: \(error)")
        }
    }

    static func line(_ value: some Encodable) throws(ConsoleError) -> ByteBuffer {
        var data = try encode(value)
        data.append(0x0A)
        return ByteBuffer(bytes: data)
    }
}
