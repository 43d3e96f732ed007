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
    private let holdingStatements = Atomic<Int>(0)
    private let open = Atomic<Int>(0)

    /// Client connections that sent bytes since ``freeze()`` (held, never forwarded): each is a
    /// statement waiting for an answer that will not come, or a new connection's startup.
    public var connectionsHeld: Int { holding.load(ordering: .acquiring) }

    /// The held connections whose held bytes begin a statement (a `Parse`, `Bind` or `Query`
    /// message): a session's query that will get no answer. A connection still opening (its
    /// startup or authentication held) is not one: a pool stops waiting for that when its
    /// caller is cancelled, but not for a statement in flight.
    public var statementsHeld: Int { holdingStatements.load(ordering: .acquiring) }

    /// Open connections that have sent a statement: sessions past their startup, which a pool
    /// leases again.
    public var sessions: Int { open.load(ordering: .acquiring) }

    /// The first byte of the PostgreSQL messages that begin a statement: `P`arse, `B`ind, `Q`uery.
    static let statementStarts: Set<UInt8> = [UInt8(ascii: "P"), UInt8(ascii: "B"), UInt8(ascii: "Q")]

    public init(target: Int) throws {
        (listener, port) = try LoopbackSocket.listen(backlog: 64)
        self.target = target
        Thread { [self] in run() }.start()
    }

    /// Forwards nothing more, in either direction, on any connection old or new.
    public func freeze() { frozen.store(true, ordering: .releasing) }

    /// Forwards again on every connection still open (what was held while frozen goes through
    /// late, as a network that recovers delivers it); a client that gave up has closed its own.
    public func thaw() { frozen.store(false, ordering: .releasing) }

    /// Ends the loop, which then closes every descriptor itself.
    public func stop() { stopped.store(true, ordering: .releasing) }

    private func run() {
        // Each descriptor with the one it forwards to; the client ends; those holding bytes,
        // and those among them holding a statement; the client ends that sent a statement.
        var peers: [Int32: Int32] = [:]
        var clients: Set<Int32> = []
        var held: Set<Int32> = []
        var statements: Set<Int32> = []
        var ready: Set<Int32> = []
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
                    if let upstream = LoopbackSocket.connect(port: target) {
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
                    // Clients write whole messages: the held bytes begin with a message's type.
                    var first: UInt8 = 0
                    if recv(entry.fd, &first, 1, Int32(MSG_PEEK)) == 1, Self.statementStarts.contains(first) {
                        statements.insert(entry.fd)
                        holdingStatements.store(statements.count, ordering: .releasing)
                    }
                    continue
                }
                let count = Glibc.read(entry.fd, &buffer, buffer.count)
                if count > 0 {
                    if clients.contains(entry.fd), Self.statementStarts.contains(buffer[0]),
                        ready.insert(entry.fd).inserted
                    {
                        open.store(ready.count, ordering: .releasing)
                    }
                    var sent = 0
                    while sent < count {
                        let wrote = buffer[sent..<count].withUnsafeBytes { write(other, $0.baseAddress, $0.count) }
                        guard wrote > 0 else { break }
                        sent += wrote
                    }
                } else {
                    // An end closed: close the pair.
                    peers[entry.fd] = nil
                    peers[other] = nil
                    clients.remove(entry.fd)
                    clients.remove(other)
                    ready.remove(entry.fd)
                    ready.remove(other)
                    open.store(ready.count, ordering: .releasing)
                    close(entry.fd)
                    close(other)
                }
            }
        }
    }
}
