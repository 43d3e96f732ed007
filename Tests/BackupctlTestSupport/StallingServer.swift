import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback HTTP server that answers every request with a status line, headers and the
/// first bytes of a body it promises to be longer, then sends nothing more and keeps the
/// connection open: a peer that stalls mid-answer.
///
/// Its accept loop runs on a thread of its own (never a cooperative one), and that thread alone
/// reads, writes and closes its descriptors: ``stop()`` only shuts the listener down and raises
/// a flag. A descriptor closed from outside could be reused by another test's socket while the
/// loop still held its number, and the loop would then answer, or accept, that test's
/// connections.
public final class StallingServer: @unchecked Sendable {
    public let port: Int
    private let listener: Int32
    private let stopped = Atomic<Bool>(false)
    private let read = Atomic<Int>(0)

    /// How many requests it has read (and left unanswered past the head).
    public var requests: Int { read.load(ordering: .acquiring) }

    /// - Parameter head: what each connection gets before the silence.
    public init(
        head: String =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"activity\":"
    ) throws {
        (listener, port) = try LoopbackSocket.listen(backlog: 16)
        let bytes = Array(head.utf8)
        Thread { [self] in serve(bytes) }.start()
    }

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Ends the accept loop, which then closes the listener and every connection itself.
    public func stop() {
        // Shut down before the flag: once the loop sees the flag it closes the listener, and
        // nothing here may touch that descriptor afterwards.
        shutdown(listener, Int32(SHUT_RDWR))
        stopped.store(true, ordering: .releasing)
    }

    private func serve(_ head: [UInt8]) {
        var connections: [Int32] = []
        defer {
            for connection in connections { close(connection) }
            close(listener)
        }
        while true {
            let connection = accept(listener, nil, nil)
            if stopped.load(ordering: .acquiring) {
                if connection >= 0 { close(connection) }
                return
            }
            // Refused by the shutdown before the flag was raised: look again.
            guard connection >= 0 else { continue }
            connections.append(connection)
            // Read the request (whatever arrives within a second), answer the head, go quiet.
            var ready = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 1000) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 65536)
            guard Glibc.read(connection, &buffer, buffer.count) > 0, !stopped.load(ordering: .acquiring) else {
                continue
            }
            read.add(1, ordering: .releasing)
            _ = head.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
        }
    }
}
