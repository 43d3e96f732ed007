import BackupModel
import ConsoleService
import Foundation
import Hummingbird
import Logging
import NIOCore

extension RequestHandler {
    /// Reads, checks and runs one operation. Everything that can refuse the request — its media
    /// type (415), its size (413), its JSON and schema (400), its input, token and role — is
    /// answered with its own status before any 200 is sent, long jobs included.
    func dispatch<Op: ConsoleOperation>(
        _ type: Op.Type, request: Request, caller: Caller, as operatorName: String, started: ContinuousClock.Instant,
        logger: Logger
    ) async -> Response {
        let operation: Op
        var request = request
        switch await read(Op.self, &request) {
        case .failure(let refusal): return record(Op.name, started, refusal.response)
        case .success(let decoded): operation = decoded
        }
        if Op.streams {
            return await stream(
                operation, request: request, caller: caller, as: operatorName, started: started, logger: logger)
        }
        do {
            let output = try await Self.perform(operation, on: console, as: caller)
            let body = try HTTPAnswer.encode(output)
            try checkAnswer(body, of: Op.name)
            return record(Op.name, started, HTTPAnswer.json(200, body))
        } catch {
            return record(Op.name, started, refused(error, operatorName: operatorName, logger: logger))
        }
    }

    /// A request answered before the operation ran.
    struct Refusal: Error {
        var response: Response
    }

    /// The operation in the body: declared JSON, at most ``HTTPAnswer/maxBody`` bytes, a JSON
    /// object that conforms to the operation's schema in the document, then decoded from the
    /// very value the schema checked (``WireJSON``: one parse, and no second reading of the text
    /// that could differ from the first).
    /// The body is collected into `request` (which keeps the connection's stream behind it, so
    /// a long job can still learn when the client goes away).
    func read<Op: ConsoleOperation>(_ type: Op.Type, _ request: inout Request) async -> Result<Op, Refusal> {
        if let refused = HTTPAnswer.unsupportedMediaType(request.headers[.contentType]) {
            return .failure(Refusal(response: refused))
        }
        if let declared = request.headers[.contentLength].flatMap(Int.init), declared > HTTPAnswer.maxBody {
            return .failure(Refusal(response: HTTPAnswer.tooLarge))
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: HTTPAnswer.maxBody)
        } catch is NIOTooManyBytesError {
            return .failure(Refusal(response: HTTPAnswer.tooLarge))
        } catch {
            return .failure(Refusal(response: HTTPAnswer.error(Self.unreadable(Op.name, "the body could not be read"))))
        }
        let value: JSONValue
        do {
            value = try WireJSON.parse(buffer.readableBytesView)
        } catch {
            return .failure(
                Refusal(response: HTTPAnswer.error(Self.unreadable(Op.name, "the body is not JSON (\(error))"))))
        }
        if let check = document.requestChecks[Op.name] {
            let violations = check.violations(of: value)
            if !violations.isEmpty {
                let shown = violations.prefix(3).joined(separator: "; ")
                return .failure(Refusal(response: HTTPAnswer.error(Self.unreadable(Op.name, shown))))
            }
        }
        do {
            return .success(try WireJSON.decode(Op.self, from: value))
        } catch {
            // Of its schema, but a value the type refuses: 422.
            return .failure(
                Refusal(response: HTTPAnswer.error(Self.unreadable(Op.name, Self.reason(error)), status: 422)))
        }
    }

    /// With ``checksAnswers``: throws `answer_off_schema` (500) when `body` breaks the
    /// operation's output schema in the document.
    func checkAnswer(_ body: Data, of name: String) throws(ConsoleError) {
        guard checksAnswers, let check = document.outputChecks[name] else { return }
        let value = (try? JSONDecoder().decode(JSONValue.self, from: body)) ?? .null
        let violations = check.violations(of: value)
        guard !violations.isEmpty else { return }
        throw ConsoleError(
            .internalError, code: "answer_off_schema",
            "The answer of \(name) breaks its schema: \(violations.prefix(5).joined(separator: "; ")).")
    }

    static func unreadable(_ name: String, _ why: String) -> ConsoleError {
        ConsoleError(.usage, code: "invalid_request", "The body is not a valid \(name) operation: \(why).")
    }

    /// What a decoder refused, without echoing the body.
    static func reason(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context), DecodingError.typeMismatch(_, let context),
            DecodingError.valueNotFound(_, let context), DecodingError.keyNotFound(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return (path.isEmpty ? "" : "\(path): ") + context.debugDescription.prefix(120)
        default:
            return "it could not be decoded"
        }
    }

    /// Runs a quick operation where the request is (with ``ConsoleServer/runTasksOnEventLoops()``,
    /// its connection's event loop), and any other on ``ConsoleServer/blockingExecutor``.
    static func perform<Op: ConsoleOperation>(
        _ operation: Op, on console: LocalConsole, as caller: Caller
    ) async throws(ConsoleError) -> Op.Output {
        if Op.isQuick { return try await console.perform(operation, as: caller, progress: nil) }
        return try await withTaskExecutorPreference(ConsoleServer.blockingExecutor) { () async throws(ConsoleError) in
            try await console.perform(operation, as: caller, progress: nil)
        }
    }
}
