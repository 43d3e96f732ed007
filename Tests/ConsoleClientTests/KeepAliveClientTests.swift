import BackupModel
import ConsoleService
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import ConsoleClient

/// The console's one-shot HTTP client against a scripted server on loopback: connections are
/// kept and reused, a kept connection the server closed is replaced without losing the
/// request, and a request once written is never sent twice.
@Suite struct KeepAliveClientTests {
    func withServer(_ body: (ScriptedServer, KeepAliveClient) async throws -> Void) async throws {
        let server = try await ScriptedServer()
        do {
            try await body(server, try KeepAliveClient(host: "127.0.0.1", port: server.port, tls: nil))
        } catch {
            try await server.stop()
            throw error
        }
        try await server.stop()
    }

    func exchange(
        _ client: KeepAliveClient, _ path: String, body: String = "", timeout: TimeAmount = .seconds(30),
        maxAnswer: Int = 1 << 20
    ) async throws -> (status: Int, body: String) {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "127.0.0.1")
        let answer = try await client.exchange(
            head: HTTPRequestHead(version: .http1_1, method: .POST, uri: path, headers: headers),
            body: ByteBuffer(string: body), timeout: timeout, maxAnswer: maxAnswer)
        return (Int(answer.status.code), String(buffer: answer.body))
    }

    @Test func sequentialRequestsShareOneConnection() async throws {
        try await withServer { server, client in
            for index in 0..<20 {
                let answer = try await exchange(client, "/echo", body: "request \(index)")
                #expect(answer.status == 200 && answer.body == "request \(index)")
            }
            #expect(server.counts.connections == 1 && server.counts.requests == 20)
        }
    }

    @Test func concurrentRequestsEachGetTheirOwnAnswer() async throws {
        try await withServer { server, client in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<8 {
                    group.addTask {
                        for index in 0..<10 {
                            let answer = try await exchange(client, "/echo", body: "\(task)-\(index)")
                            #expect(answer.body == "\(task)-\(index)")
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(server.counts.requests == 80)
            #expect(server.counts.connections <= 8)
        }
    }

    /// The benchmark's transport floor: a GET on the console's kept connections, its status
    /// and body returned, whatever the status.
    @Test func aConsolesGetSharesTheKeptConnections() async throws {
        let server = try await ScriptedServer()
        let console = try RemoteConsole(server: "http://127.0.0.1:\(server.port)", timeout: .seconds(30))
        let answers = [try await console.get("/status/503"), try await console.get("/big/3")]
        try await server.stop()
        #expect(answers[0].status == 503 && String(decoding: answers[0].body, as: UTF8.self) == #"{"x":1}"#)
        #expect(answers[1].status == 200 && answers[1].body == Data("aaa".utf8))
        #expect(server.counts.connections == 1 && server.counts.requests == 2)
    }

    @Test func anErrorStatusIsAnAnswerAndKeepsTheConnection() async throws {
        try await withServer { server, client in
            let answer = try await exchange(client, "/status/403")
            #expect(answer.status == 403 && answer.body == #"{"x":1}"#)
            #expect(try await exchange(client, "/echo", body: "after").body == "after")
            #expect(server.counts.connections == 1)
        }
    }

    @Test func aConnectionTheServerClosedIsReplacedAndTheRequestSentOnce() async throws {
        try await withServer { server, client in
            #expect(try await exchange(client, "/echo", body: "one").body == "one")
            // The server drops its idle connections, as after its idle timeout.
            try await server.closeConnections()
            await client.keptConnectionsClosed()
            #expect(try await exchange(client, "/echo", body: "two").body == "two")
            #expect(server.counts.connections == 2)
            #expect(server.counts.requests == 2)
            // `Connection: close` in an answer: the next request opens a new connection.
            #expect(try await exchange(client, "/close").body == "bye")
            #expect(try await exchange(client, "/echo", body: "three").body == "three")
            #expect(server.counts.connections == 3 && server.counts.requests == 4)
        }
    }

    @Test func aNewConnectionTheServerClosesAtOnceIsReplacedOnceAndTheRequestSentOnce() async throws {
        // Closed before the request was written: the server cannot have acted, so one new
        // connection is tried. The client may also have written it before the close reached it;
        // then it must not send it again, and says the connection closed before the answer.
        // Never a bare socket or pipeline error.
        let server = try await ScriptedServer(closingFirst: 1)
        let client = try KeepAliveClient(host: "127.0.0.1", port: server.port, tls: nil)
        do {
            let answer = try await exchange(client, "/echo", body: "one")
            #expect(answer.status == 200 && answer.body == "one")
            #expect(server.counts.connections == 2 && server.counts.requests == 1)
        } catch KeepAliveClient.Failure.closedBeforeAnswer {
            #expect(server.counts.connections == 1 && server.counts.requests == 0)
        }
        try await server.stop()
        // At most once more: a server that closes every connection is an error, named as one.
        let closing = try await ScriptedServer(closingFirst: 3)
        let refused = try KeepAliveClient(host: "127.0.0.1", port: closing.port, tls: nil)
        await #expect {
            _ = try await exchange(refused, "/echo", body: "two")
        } throws: { error in
            switch error as? KeepAliveClient.Failure {
            case .notSent?, .closedBeforeAnswer?: true
            default: false
            }
        }
        #expect(closing.counts.connections <= 2 && closing.counts.requests == 0)
        try await closing.stop()
    }

    @Test func aConnectionDroppedAfterTheRequestIsAnErrorNotARetry() async throws {
        try await withServer { server, client in
            await #expect {
                _ = try await exchange(client, "/drop")
            } throws: { error in
                if case KeepAliveClient.Failure.closedBeforeAnswer = error { return true }
                return false
            }
            #expect(server.counts.requests == 1)
        }
    }

    @Test func anAnswerNobodyAskedForClosesTheConnection() async throws {
        try await withServer { server, client in
            let first = try await exchange(client, "/twice")
            #expect(first.body == "first")
            // The second answer must never be taken for the next request's.
            let mine = try await exchange(client, "/echo", body: "mine")
            let again = try await exchange(client, "/echo", body: "again")
            #expect(mine.body == "mine" && again.body == "again")
            #expect(server.counts.connections == 2 && server.counts.requests == 3)
        }
    }

    @Test func anAnswerOverTheLimitFailsAndClosesTheConnection() async throws {
        try await withServer { server, client in
            await #expect {
                _ = try await exchange(client, "/big/100000", maxAnswer: 65_536)
            } throws: { error in
                if case KeepAliveClient.Failure.answerTooLarge(65_536) = error { return true }
                return false
            }
            let small = try await exchange(client, "/big/1000", maxAnswer: 65_536)
            #expect(small.body.count == 1000)
            #expect(server.counts.connections == 2)
        }
    }

    @Test func aRequestPastItsDeadlineFails() async throws {
        try await withServer { _, client in
            await #expect {
                _ = try await exchange(client, "/hang", timeout: .milliseconds(100))
            } throws: { error in
                if case KeepAliveClient.Failure.timedOut = error { return true }
                return false
            }
            let after = try await exchange(client, "/echo", body: "still")
            #expect(after.body == "still")
        }
    }

    @Test func cancellingTheCallerClosesItsConnection() async throws {
        try await withServer { server, client in
            var arrivals = server.arrivals.makeAsyncIterator()
            let call = Task { try await exchange(client, "/hang") }
            // Checkpoint: the server has the request in hand.
            #expect(await arrivals.next() == "/hang")
            call.cancel()
            await #expect(throws: CancellationError.self) { _ = try await call.value }
            let next = try await exchange(client, "/echo", body: "next")
            #expect(next.body == "next")
            #expect(server.counts.connections == 2 && server.counts.requests == 2)
        }
    }

    @Test func aRefusedConnectionNamesTheReason() async throws {
        let client = try KeepAliveClient(host: "127.0.0.1", port: 1, tls: nil)
        do {
            _ = try await exchange(client, "/echo")
            Issue.record("a connection to port 1 succeeded")
        } catch {
            let console = RemoteConsole.transportError(error, server: "http://127.0.0.1:1")
            #expect(console.code == "server_unavailable")
            #expect(console.message.contains("connection refused"), "\(console.message)")
        }
    }

    @Test func aServerURLIsCheckedBeforeAnyConnection() throws {
        for bad in ["ftp://127.0.0.1:1", "http://user:pw@127.0.0.1:1", "http://127.0.0.1:1/path", "127.0.0.1:8080"] {
            #expect(throws: ConsoleError.self) { try RemoteConsole(server: bad) }
        }
        let console = try RemoteConsole(server: "http://[::1]:8080/")
        #expect(console.baseURL == "http://[::1]:8080" && console.hostHeader == "[::1]:8080")
        #expect(console.plain.host == "::1" && console.plain.port == 8080)
        #expect(try RemoteConsole(server: "https://console.example").plain.port == 443)
    }
}

/// The client's transport rules: redirects never followed (a token must not follow a 307 to
/// another host), plain HTTP only to loopback.
@Suite struct TransportRuleTests {
    @Test func aRedirectToAnotherHostIsNeverFollowed() async throws {
        let target = try await ScriptedServer(host: "127.0.0.2")
        let redirector = try await ScriptedServer(redirectingTo: target.port)
        defer {
            Task {
                try? await target.stop()
                try? await redirector.stop()
            }
        }
        let console = try RemoteConsole(server: "http://127.0.0.1:\(redirector.port)", timeout: .seconds(30))
        let caller = Caller(token: SecretBytes(Array("bctl_\(String(repeating: "A", count: 43))".utf8)), tenant: nil)
        // A one-shot operation and a streamed job: both fail, and nothing reaches the target.
        await #expect(throws: ConsoleError.self) { _ = try await console.perform(WhoamiOperation(), as: caller) }
        await #expect(throws: ConsoleError.self) {
            _ = try await console.perform(SeedOperation(backups: 1, orphans: 0, seed: 1), as: caller)
        }
        #expect(redirector.counts.requests == 2)
        #expect(target.counts.connections == 0 && target.counts.requests == 0)
    }

    @Test func plainHTTPBeyondLoopbackIsRefusedBeforeAnyConnection() throws {
        for server in ["http://10.1.2.3:8443", "http://backupctl.internal:8443", "http://[fd00::1]:8443"] {
            do {
                _ = try RemoteConsole(server: server)
                Issue.record("\(server) was accepted")
            } catch {
                #expect(error.kind == .configuration && error.code == "plain_http_refused", "\(error.message)")
            }
            #expect((try? RemoteConsole(server: server, allowPlainHTTP: true)) != nil)
        }
        for server in ["http://127.0.0.1:8443", "http://localhost:8443", "http://[::1]:8443", "https://10.1.2.3:8443"] {
            #expect((try? RemoteConsole(server: server)) != nil, "\(server)")
        }
    }
}
