import BackupModel
import ConsoleService
import Foundation
import Hummingbird
import Logging
import NIOCore
import Synchronization

extension RequestHandler {
    /// A long job. It starts at once, but the answer waits for its first frame: a job refused
    /// before it reports anything (its role, its input, a conflict) is answered with the real
    /// status and an error document; otherwise 200 with JSON lines — `{"progress":…}` frames,
    /// then `{"result":…}` or `{"error":…}`. A client that goes away cancels the job, which
    /// stops after the call it is in.
    func stream<Op: ConsoleOperation>(
        _ operation: Op, request: Request, caller: Caller, as operatorName: String, started: ContinuousClock.Instant,
        logger: Logger
    ) async -> Response {
        let console = console
        let metrics = metrics
        let handler = self
        let isCleanupRun = ServerMetrics.isCleanupRun(Op.name)
        let (frames, continuation) = AsyncStream<Wire.Frame<Op.Output>>.makeStream()
        let hold = JobHold(environment: ProcessInfo.processInfo.environment)
        let job = Task(executorPreference: ConsoleServer.blockingExecutor) {
            do throws(ConsoleError) {
                let output = try await console.perform(operation, as: caller) { event in
                    if isCleanupRun { metrics.cleanupProgress(done: event.done, total: event.total) }
                    continuation.yield(Wire.Frame(progress: event))
                    hold.reached()
                }
                try handler.checkAnswer(try HTTPAnswer.encode(output), of: Op.name)
                continuation.yield(Wire.Frame(result: output))
            } catch {
                _ = handler.refused(error, operatorName: operatorName, logger: logger)
                continuation.yield(Wire.Frame(error: .init(error)))
            }
            continuation.finish()
        }
        let source = FrameSource(frames)
        guard let first = await source.next() else {
            return record(Op.name, started, HTTPAnswer.error(.internalError("\(Op.name) ended without an outcome.")))
        }
        if let error = first.error {
            // Refused before it began: an honest status, not a 200 with an error inside.
            let failure = error.consoleError
            return record(Op.name, started, HTTPAnswer.refusal(failure))
        }
        var headers = HTTPFields()
        headers[.contentType] = Wire.jsonLines
        // The body is read beside the answer (to see the client go), which leaves the connection
        // unusable for another request: it closes when the answer ends, and says so, so that a
        // client does not send its next request on it (a race it loses on a busy server).
        headers[.connection] = "close"
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                // The status of the job's outcome (the HTTP status is 200 once the stream began).
                var outcome = 200
                // Whether the result or error line was written (a client may close right after it).
                var delivered = false
                do {
                    try await request.body.consumeWithInboundCloseHandler { _ in
                        var frame: Wire.Frame<Op.Output>? = first
                        while let current = frame {
                            if let error = current.error {
                                outcome = Wire.status(
                                    for: ConsoleError.Kind(rawValue: error.kind) ?? .internalError, code: error.code)
                            }
                            try await writer.write(try HTTPAnswer.line(current))
                            if current.progress == nil { delivered = true }
                            frame = await source.next()
                        }
                    } onInboundClosed: {
                        hold.release()
                        job.cancel()
                    }
                    try await writer.finish(nil)
                } catch  where !delivered {
                    // The client went away (or the server was cancelled): the job was cancelled with it.
                    hold.release()
                    job.cancel()
                    outcome = 499
                    logger.info("client left during a job; it was stopped", metadata: ["op": "\(Op.name)"])
                } catch {
                    // The outcome was written; the client closed before the end of the body.
                }
                metrics.request(op: Op.name, status: outcome, nanoseconds: Self.nanoseconds(since: started))
            })
    }
}

/// The frames of one job, read first by the handler (to choose the status) and then by the
/// response body's writer. The two reads never overlap — the writer starts only after the
/// handler returned — so the one iterator is never used by two tasks at once.
final class FrameSource<Frame: Sendable>: @unchecked Sendable {
    private var iterator: AsyncStream<Frame>.Iterator

    init(_ stream: AsyncStream<Frame>) { iterator = stream.makeAsyncIterator() }

    func next() async -> Frame? { await iterator.next() }
}

/// `BACKUPCTL_PAUSE_AT=job.progress` (debug builds): a job's first progress report holds the job
/// on the server until its client has gone, so an interruption test knows the job was stopped
/// part-way (never "after N ms"). Release builds ignore it; the hold is bounded (60 s).
final class JobHold: Sendable {
    private let state: Mutex<(armed: Bool, released: Bool)>?

    init(environment: [String: String]) {
        #if DEBUG
            state = environment["BACKUPCTL_PAUSE_AT"] == "job.progress" ? Mutex((true, false)) : nil
        #else
            state = nil
        #endif
    }

    func reached() {
        let first =
            state?.withLock { current in
                defer { current.armed = false }
                return current.armed
            } ?? false
        guard first else { return }
        for _ in 0..<6000 where state?.withLock({ $0.released }) == false { usleep(10_000) }
    }

    func release() { state?.withLock { $0.released = true } }
}
