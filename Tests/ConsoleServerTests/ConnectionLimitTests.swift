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

        init(port: Int) throws {
            guard let socket = connectLoopback(port: port) else { throw POSIXError(.ECONNREFUSED) }
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

        /// What arrives within `milliseconds` (empty when nothing does).
        func receive(within milliseconds: Int) -> String {
            var timeout = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(socket, &buffer, buffer.count, 0)
            return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : ""
        }
    }

    @Test func aConnectionBeyondTheCapWaitsForOneToClose() async throws {
        try await ServerFixture.with(configuration: { ConsoleServer.Configuration(listen: $0, maxConnections: 1) }) {
            fixture in
            let port = try #require(URLComponents(string: fixture.url)?.port)
            let request = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            let first = try RawConnection(port: port)
            first.send(request)
            #expect(first.receive(within: 30_000).hasPrefix("HTTP/1.1 200"))
            // The first connection stays open: the second is not taken in. (Slowness can only
            // make this pass, never fail: an answer would come within milliseconds.)
            let second = try RawConnection(port: port)
            second.send(request)
            #expect(second.receive(within: 300).isEmpty)
            first.close()
            #expect(second.receive(within: 30_000).hasPrefix("HTTP/1.1 200"))
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
