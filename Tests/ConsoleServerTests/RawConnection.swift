import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A plain TCP connection to 127.0.0.1:`port`, from any loopback address (a test plays clients
/// at several addresses), that never blocks a thread: the server under test may share this
/// process's threads.
final class RawConnection: @unchecked Sendable {
    let socket: Int32
    private let lock = NSLock()
    /// Closed once only: a second close could hit a descriptor the process reused.
    private var closed = false

    init(port: Int, from source: String = "127.0.0.1") throws {
        guard let socket = connectLoopback(port: port, from: source) else { throw POSIXError(.ECONNREFUSED) }
        self.socket = socket
    }

    deinit { close() }

    func close() {
        let first = lock.withLock {
            defer { closed = true }
            return !closed
        }
        if first { _ = Glibc.close(socket) }
    }

    /// Sends `text` without blocking; false when the connection no longer takes it.
    @discardableResult
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        let sent = bytes.withUnsafeBytes {
            Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
        }
        return sent == bytes.count
    }

    /// Whether the server closed its side: a read finds the end of the stream or a reset (data
    /// still unread is skipped).
    func isClosedByPeer() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(socket, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count == 0 { return true }
            if count < 0 { return errno == ECONNRESET || errno == EPIPE }
        }
    }

    /// What arrives within `milliseconds` (empty when nothing does, or the connection ends first).
    func receive(within milliseconds: Int) async -> String {
        var buffer = [UInt8](repeating: 0, count: 65536)
        for _ in 0..<max(1, milliseconds / 5) {
            let count = recv(socket, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count > 0 { return String(decoding: buffer[0..<count], as: UTF8.self) }
            if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) { return "" }
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
        return ""
    }

    /// A whole answer with a `Content-Length` body, within `milliseconds`: its status, headers
    /// and body; `nil` when it does not arrive whole in time.
    func answer(within milliseconds: Int) async -> (status: Int, headers: [String: String], body: String)? {
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 65536)
        for _ in 0..<max(1, milliseconds / 5) {
            let count = recv(socket, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count > 0 {
                text += String(decoding: buffer[0..<count], as: UTF8.self)
                if let parsed = Self.parse(text) { return parsed }
                continue
            }
            if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) { return Self.parse(text) }
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
        return nil
    }

    static func parse(_ text: String) -> (status: Int, headers: [String: String], body: String)? {
        guard let split = text.range(of: "\r\n\r\n") else { return nil }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        guard let statusLine = lines.first, let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        let body = String(text[split.upperBound...])
        guard let length = Int(headers["content-length"] ?? ""), body.utf8.count >= length else { return nil }
        return (status, headers, body)
    }
}
