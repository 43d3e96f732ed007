import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback TCP proxy to `127.0.0.1:target` that forwards both ways until ``freeze()``, and
/// from then on forwards nothing while keeping every connection open: a database that stops
/// answering mid-session (a hung host, a network that drops everything), which a client cannot
/// tell from a slow one.
///
/// One thread of its own owns every descriptor: it accepts, polls and forwards, and closes them
/// all once ``stop()`` raised the flag (as ``StallingServer`` does, so no descriptor number is
/// closed under another test's socket).
public final class FreezingProxy: @unchecked Sendable {
    public let port: Int
    private let listener: Int32
    private let target: Int
    private let stopped = Atomic<Bool>(false)
    private let frozen = Atomic<Bool>(false)
    private let holding = Atomic<Int>(0)

    /// Client connections that sent bytes since ``freeze()`` (held, never forwarded): each is a
    /// statement waiting for an answer that will not come.
    public var connectionsHeld: Int { holding.load(ordering: .acquiring) }

    public init(target: Int) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw POSIXError(.EMFILE) }
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(listener, 64) == 0 else {
            close(listener)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.listener = listener
        self.target = target
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in run() }.start()
    }

    /// Forwards nothing more, in either direction, on any connection old or new.
    public func freeze() { frozen.store(true, ordering: .releasing) }

    /// Ends the loop, which then closes every descriptor itself.
    public func stop() { stopped.store(true, ordering: .releasing) }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }

    private func connectToTarget() -> Int32? {
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard upstream >= 0 else { return nil }
        var address = Self.loopback(port: target)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(upstream)
            return nil
        }
        return upstream
    }

    private func run() {
        // Each descriptor with the one it forwards to; the client ends; those holding bytes.
        var peers: [Int32: Int32] = [:]
        var clients: Set<Int32> = []
        var held: Set<Int32> = []
        defer {
            for fd in peers.keys { close(fd) }
            close(listener)
        }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !stopped.load(ordering: .acquiring) {
            let forwarding = !frozen.load(ordering: .acquiring)
            var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            // Frozen, only clients are read (and what they send is held); the database's side
            // is left unread, as a hung host leaves it.
            fds += peers.keys.filter { forwarding || (clients.contains($0) && !held.contains($0)) }.map {
                pollfd(fd: $0, events: Int16(POLLIN), revents: 0)
            }
            guard poll(&fds, nfds_t(fds.count), 100) > 0 else { continue }
            if fds[0].revents & Int16(POLLIN) != 0 {
                let client = accept(listener, nil, nil)
                if client >= 0 {
                    if let upstream = connectToTarget() {
                        peers[client] = upstream
                        peers[upstream] = client
                        clients.insert(client)
                    } else {
                        close(client)
                    }
                }
            }
            for entry in fds.dropFirst() where entry.revents != 0 {
                guard let other = peers[entry.fd] else { continue }
                if !forwarding {
                    // Held: the client's statement is never forwarded, and never read again.
                    held.insert(entry.fd)
                    holding.store(held.count, ordering: .releasing)
                    continue
                }
                let count = Glibc.read(entry.fd, &buffer, buffer.count)
                if count > 0 {
                    var sent = 0
                    while sent < count {
                        let wrote = buffer.withUnsafeBytes { write(other, $0.baseAddress! + sent, count - sent) }
                        guard wrote > 0 else { break }
                        sent += wrote
                    }
                } else {
                    // An end closed: close the pair.
                    peers[entry.fd] = nil
                    peers[other] = nil
                    clients.remove(entry.fd)
                    clients.remove(other)
                    close(entry.fd)
                    close(other)
                }
            }
        }
    }
}
