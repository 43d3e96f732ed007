import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback HTTP server that answers every request with a status line, headers and the
/// first bytes of a body it promises to be longer, then sends nothing more and keeps the
/// connection open: a peer that stalls mid-answer. Its accept loop runs on a thread of its
/// own (never a cooperative one); ``stop()`` closes every socket, which ends it.
public final class StallingServer: @unchecked Sendable {
    public let port: Int
    private let listener: Int32
    private let connections = Mutex<[Int32]>([])

    /// - Parameter head: what each connection gets before the silence.
    public init(
        head: String =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"activity\":"
    ) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(listener, 16) == 0 else {
            close(listener)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        let bytes = Array(head.utf8)
        Thread { [self] in
            while true {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { break }
                self.connections.withLock { $0.append(connection) }
                // Read the request (whatever arrives first), then answer the head and go quiet.
                var buffer = [UInt8](repeating: 0, count: 65536)
                _ = read(connection, &buffer, buffer.count)
                _ = bytes.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
            }
        }.start()
    }

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Closes the listener (its accept loop ends) and every connection.
    public func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for connection in connections.withLock({ $0 }) { close(connection) }
    }
}
