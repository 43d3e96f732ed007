import ConsoleServer
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `serve --max-connections`: beyond the cap the server stops accepting, and a waiting
/// connection is served once another closes (instead of `accept` failing in a loop at the
/// process's file limit while every caller waits).
@Suite struct ConnectionLimitTests {
    /// A plain TCP connection to 127.0.0.1:`port` that reads with a deadline.
    final class RawConnection {
        let socket: Int32
        /// Closed once only: a second close could hit a descriptor the process reused.
        private var closed = false

        init(port: Int, from source: String = "127.0.0.1") throws {
            guard let socket = connectLoopback(port: port, from: source) else { throw POSIXError(.ECONNREFUSED) }
            self.socket = socket
        }

        deinit { close() }

        func close() {
            guard !closed else { return }
            closed = true
            _ = Glibc.close(socket)
        }

        func send(_ text: String) {
            _ = Array(text.utf8).withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, 0) }
        }

        /// Whether the server closed its side: a read finds the end of the stream (data that
        /// is still unread is skipped).
        func isClosedByPeer() -> Bool {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(socket, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if count == 0 { return true }
                if count < 0 { return errno == ECONNRESET }
            }
        }

        /// What arrives within `milliseconds` (empty when nothing does). Polled without
        /// blocking a thread: the server under test may run on this process's threads.
        func receive(within milliseconds: Int) async -> String {
            var buffer = [UInt8](repeating: 0, count: 4096)
            for _ in 0..<max(1, milliseconds / 10) {
                let count = recv(socket, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if count > 0 { return String(decoding: buffer[0..<count], as: UTF8.self) }
                if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) { return "" }
                try? await Task.sleep(nanoseconds: 10_000_000)
            }
            return ""
        }
    }

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
            #expect(await second.receive(within: 300).isEmpty)
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
