import BackupModel
import BackupctlTestSupport
import Testing

@testable import Turnkey

/// A Turnkey that sends an answer's head and then goes quiet mid-body: the HTTP client's own
/// deadline has ended with the head, so only the transport's bounds the body.
@Suite(.timeLimit(.minutes(10))) struct StalledAnswerTests {
    @Test func anAnswerThatStallsMidBodyIsATimeoutWithinTheRequestsDeadline() async throws {
        let server = try StallingServer()
        defer { server.stop() }
        let request = TurnkeyHTTPRequest(
            baseURL: server.baseURL, path: TurnkeyWire.whoamiPath, body: Array("{}".utf8), stamp: "x",
            timeoutMillis: 300)
        let error = await #expect(throws: TurnkeyError.self) { _ = try await HTTPClientTransport().send(request) }
        #expect(error?.kind == .timeout)
        #expect(error?.description.contains("did not finish within 300 ms") == true)
    }
}
