import ConsoleServer
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `serve --max-connections`: beyond the cap a connection that has not sent a request head
/// (an idle one) makes room; while every connection is busy the server stops accepting, and a
/// waiting connection is served once one frees (instead of `accept` failing in a loop at the
/// process's file limit while every caller waits).
@Suite struct ConnectionLimitTests {
    /// Whether the server closed `connection` within `seconds` (a bounded wait).
    static func closedByServer(_ connection: RawConnection, within seconds: Double = 30) async -> Bool {
        await eventually(seconds: seconds) { connection.isClosedByPeer() }
    }

    @Test func anIdleConnectionMakesRoomForANewOneAtTheCap() async throws {
        try await ServerFixture.with(configuration: { ConsoleServer.Configuration(listen: $0, maxConnections: 1) }) {
            fixture in
            let port = try #require(URLComponents(string: fixture.url)?.port)
            let request = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            let first = try RawConnection(port: port)
            first.send(request)
            #expect(await first.receive(within: 30_000).hasPrefix("HTTP/1.1 200"))
            // The first connection is idle now: the second takes its place at once.
            let second = try RawConnection(port: port)
            second.send(request)
            #expect(await second.receive(within: 30_000).hasPrefix("HTTP/1.1 200"))
            #expect(await Self.closedByServer(first))
        }
    }

    @Test func aConnectionBeyondTheCapWaitsWhileEveryOneIsBusy() async throws {
        try await ServerFixture.with(
            configuration: { ConsoleServer.Configuration(listen: $0, maxConnections: 1) },
            operations: SlowPlainOperation.operations
        ) { fixture in
            let port = try #require(URLComponents(string: fixture.url)?.port)
            let gate = "cap-\(UUID().uuidString)"
            let body = #"{"gate":"\#(gate)"}"#
            let busy = try RawConnection(port: port)
            busy.send(
                "POST /v1/ops/test.slowPlain HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(ServerFixture.text(fixture.rootToken))\r\n"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
            #expect(await eventually { Gates.hasStarted(gate) })
            // The only slot serves a request: the second connection (from another address, so
            // the server's cap decides, not its address's) is not taken in. (Slowness can only
            // make this pass, never fail: an answer would come within milliseconds.)
            let second = try RawConnection(port: port, from: "127.0.0.2")
            second.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let early = await second.receive(within: 300)
            #expect(early.isEmpty, "served while the only slot was busy: \(early)")
            Gates.open(gate)
            #expect(await busy.receive(within: 30_000).hasPrefix("HTTP/1.1 200"))
            // Once the busy connection is idle it gives way, and the waiting one is served.
            #expect(await second.receive(within: 30_000).hasPrefix("HTTP/1.1 200"))
        }
    }

    @Test func theCapIsBoundedAndDefaultsUnderTheFileLimit() throws {
        let listen = try ListenAddress(parsing: "127.0.0.1:0")
        #expect(throws: (any Error).self) {
            try ConsoleServer.Configuration(listen: listen, maxConnections: 0).validate()
        }
        try ConsoleServer.Configuration(listen: listen, maxConnections: 1).validate()
        var limit = rlimit()
        _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let cap = ConsoleServer.Configuration.defaultMaxConnections()
        #expect((16...1024).contains(cap))
        #expect(UInt(cap) <= max(16, limit.rlim_cur / 2))
    }
}
