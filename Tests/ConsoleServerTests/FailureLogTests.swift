import BackupModel
import Logging
import Synchronization
import Testing

@testable import ConsoleServer

/// An answer of 500 or more is logged with its code and sentence beside the request's id, so
/// that an operator reading the server's log learns why; a refusal the caller caused is not.
@Suite struct FailureLogTests {
    final class Lines: Sendable {
        let all = Mutex<[String]>([])
    }

    /// Keeps every message with its metadata.
    struct Capture: LogHandler {
        let lines: Lines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            lines.all.withLock { $0.append("\(event.level) \(event.message) \(fields)") }
        }
    }

    @Test func aServerFailureIsLoggedWithItsReason() {
        let lines = Lines()
        var logger = Logger(label: "test") { _ in Capture(lines: lines) }
        logger[metadataKey: "request"] = "r1"
        let failure = ConsoleError.internalError("The PostgreSQL store failed while reading the access version: x.")
        #expect(RequestHandler.refusal(failure, logger: logger).status.code == 500)
        let unreachable = ConsoleError(
            .remote, code: "database_unavailable", "Cannot reach PostgreSQL at h:1: refused.")
        #expect(RequestHandler.refusal(unreachable, logger: logger).status.code == 502)
        #expect(RequestHandler.refusal(.notFound("No backup."), logger: logger).status.code == 404)
        #expect(
            RequestHandler.refusal(ConsoleError(.usage, code: "invalid_request", "Bad."), logger: logger).status.code
                == 422)
        let logged = lines.all.withLock { $0 }
        #expect(
            logged == [
                "error failed code=internal_error reason=\(failure.message) request=r1",
                "error failed code=database_unavailable reason=\(unreachable.message) request=r1",
            ])
    }
}
