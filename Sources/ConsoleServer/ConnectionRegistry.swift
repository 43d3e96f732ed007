import Foundation
import HummingbirdCore
import Logging
import NIOCore

/// Every open connection of a server, with the phase it is in, so that nobody without a token
/// can hold the server's connection slots.
///
/// Two caps: ``ConnectionLimits/maxConnections`` served at once, and
/// ``ConnectionLimits/maxPerAddress`` from one client address. A connection that would pass a
/// cap takes the place of the oldest connection that has not yet sent a whole request head (a
/// new one, a slow one, an idle kept one), of its address first. Only when every served
/// connection is busy with a request does a new one wait: unread, in a short queue here (a
/// quarter of the cap), then in the kernel's; it is served as soon as one frees. Past its
/// address's cap with nothing of that address to push out, it is closed. A client opening
/// connections as fast as it can therefore only ever pushes out unfinished or idle ones, its
/// own first, and an operator's request is never evicted once its head has arrived. A
/// connection that has not yet carried a request with a valid token is evictable in any phase:
/// a client without a token answered slowly (a large document read at a trickle, requests
/// pipelined behind it) would otherwise hold its slot as long as it likes.
final class ConnectionRegistry: @unchecked Sendable {
    /// Where a connection stands; ``idle`` and ``head`` can always be evicted, the others only
    /// on a connection no valid token has been seen on (``trust(channel:)``).
    enum Phase: Sendable {
        /// Between requests, no byte of the next one yet.
        case idle
        /// A request head (or the TLS handshake) is on its way.
        case head
        /// The head arrived; its body is being read.
        case body
        /// The request is being served.
        case busy

        var evictable: Bool { self == .idle || self == .head }
    }

    /// What ``admit(_:address:channel:resume:)`` decided.
    enum Admission: Sendable {
        case serve
        /// Keep it unread until `resume` is called.
        case wait
        case refuse
    }

    struct Entry {
        var address: String
        var phase: Phase
        /// When it entered its phase (the oldest evictable one goes first).
        var since: UInt64
        var channel: any Channel
        var evicted = false
        /// A request with a valid operator token was served on it.
        var trusted = false
        /// Admitted to wait: unread, no deadline, not served.
        var waiting = false
        /// Starts a waiting connection (on its own event loop).
        var resume: @Sendable () -> Void
    }

    let limits: ConnectionLimits
    /// Connections that may wait in the process for a slot.
    var maxWaiting: Int { max(1, limits.maxConnections / 4) }
    private let lock = NSLock()
    // Guarded by `lock`.
    private var entries: [ObjectIdentifier: Entry] = [:]
    private var queue: [ObjectIdentifier] = []
    private var perAddress: [String: Int] = [:]
    /// Each registered connection's entry, by its channel (``trust(channel:)``).
    private var byChannel: [ObjectIdentifier: ObjectIdentifier] = [:]
    private var tick: UInt64 = 0
    /// Connections accepted and closed, as the accept gate counts them (a connection counts
    /// from its accept, before its pipeline registers it here).
    private var accepted = 0
    private var released = 0
    /// The accept gate found no room and nothing to evict: the next connection to go idle
    /// makes room.
    private var acceptBlocked = false
    /// Connections closed by this registry, by reason (for metrics and tests).
    private var closedCounts: [String: Int] = [:]

    /// Where each connection the registry closes or refuses is logged (`info`, with its
    /// reason): a client cut off by a deadline or a cap can be told from a server that failed.
    private let logger: Logger?

    init(limits: ConnectionLimits, logger: Logger? = nil) {
        self.limits = limits
        self.logger = logger
    }

    /// Counts (under the lock) and logs a connection closed or refused for `reason`.
    private func noteClosed(_ reason: String, address: String) {
        closedCounts[reason, default: 0] += 1
        logger?.info("closed a connection", metadata: ["reason": "\(reason)", "address": "\(address)"])
    }

    /// Takes a new connection in: served (evicting an older one if a cap is reached), kept
    /// waiting while every served one is busy, or refused past its address's cap.
    func admit(
        _ id: ObjectIdentifier, address: String, channel: any Channel, resume: @escaping @Sendable () -> Void
    ) -> Admission {
        var victims: [any Channel] = []
        let admission = lock.withLock { () -> Admission in
            if perAddress[address, default: 0] >= limits.maxPerAddress {
                guard let id = oldestEvictable(address: address), let victim = evict(id, reason: "address_cap") else {
                    noteClosed("address_refused", address: address)
                    return .refuse
                }
                victims.append(victim)
            }
            var admission = Admission.serve
            if served >= limits.maxConnections {
                if let id = oldestEvictable(address: nil), let victim = evict(id, reason: "server_cap") {
                    victims.append(victim)
                } else if queue.count < maxWaiting {
                    admission = .wait
                } else {
                    noteClosed("server_refused", address: address)
                    return .refuse
                }
            }
            tick += 1
            entries[id] = Entry(
                address: address, phase: .head, since: tick, channel: channel, waiting: admission == .wait,
                resume: resume)
            if admission == .wait { queue.append(id) }
            byChannel[ObjectIdentifier(channel)] = id
            perAddress[address, default: 0] += 1
            return admission
        }
        for victim in victims { victim.close(promise: nil) }
        return admission
    }

    /// Moves a connection to `phase`. A connection that goes idle while others wait for a slot
    /// (or the accept gate is closed) is closed at once: the oldest waiting one takes its place.
    func setPhase(_ id: ObjectIdentifier, _ phase: Phase) {
        var victim: (any Channel)?
        var resume: (@Sendable () -> Void)?
        lock.withLock {
            guard var entry = entries[id], !entry.evicted, entry.phase != phase else { return }
            tick += 1
            entry.phase = phase
            entry.since = tick
            entries[id] = entry
            guard phase == .idle, acceptBlocked || !queue.isEmpty else { return }
            acceptBlocked = false
            victim = evict(id, reason: "server_cap")
            resume = nextWaiting()
        }
        victim?.close(promise: nil)
        resume?()
    }

    func remove(_ id: ObjectIdentifier) {
        let resume: (@Sendable () -> Void)? = lock.withLock {
            guard let entry = entries.removeValue(forKey: id) else { return nil }
            byChannel[ObjectIdentifier(entry.channel)] = nil
            queue.removeAll { $0 == id }
            guard !entry.evicted else { return nil }
            release(address: entry.address)
            // A served slot freed: the oldest waiting connection is served now.
            return entry.waiting ? nil : nextWaiting()
        }
        resume?()
    }

    /// The connection on `channel` carried a request with a valid operator token: from now on
    /// it is evicted only between requests (or while a head is on its way).
    func trust(channel: ObjectIdentifier) {
        lock.withLock {
            guard let id = byChannel[channel], var entry = entries[id], !entry.trusted else { return }
            entry.trusted = true
            entries[id] = entry
        }
    }

    /// Counts a connection the guard closed (a timeout), by reason.
    func countClosed(_ reason: String, address: String) {
        lock.withLock { noteClosed(reason, address: address) }
    }

    /// Whether the listening socket may be read (a connection accepted) now: there is room for
    /// it to be served or to wait here, or a connection ``admit(_:address:channel:resume:)``
    /// can evict for it. It evicts nothing itself: the socket is read whether or not a
    /// connection is pending.
    func makeRoom() -> Bool {
        lock.withLock {
            if occupancy < limits.maxConnections + maxWaiting || oldestEvictable(address: nil) != nil { return true }
            acceptBlocked = true
            return false
        }
    }

    /// The accept gate took a connection in (it counts before its pipeline registers it).
    func connectionAccepted() { lock.withLock { accepted += 1 } }

    /// A connection the gate took in has closed.
    func connectionReleased() { lock.withLock { released += 1 } }

    /// Connections served or waiting, and those closed by each reason so far.
    var snapshot: (open: Int, closed: [String: Int]) {
        lock.withLock { (occupancy, closedCounts) }
    }

    // MARK: Under the lock

    /// Connections holding a socket: accepted and not closed, minus those being closed for
    /// eviction. It may count a closing connection a moment too long, never too short.
    private var occupancy: Int {
        accepted - released - entries.values.reduce(0) { $0 + ($1.evicted ? 1 : 0) }
    }

    /// Connections being served (registered, not evicted, not waiting).
    private var served: Int { entries.values.reduce(0) { $0 + ($1.evicted || $1.waiting ? 0 : 1) } }

    private func oldestEvictable(address: String?) -> ObjectIdentifier? {
        var best: (id: ObjectIdentifier, since: UInt64)?
        for (id, entry) in entries where !entry.evicted && !entry.waiting && (entry.phase.evictable || !entry.trusted) {
            if let address, entry.address != address { continue }
            if let current = best, current.since <= entry.since { continue }
            best = (id, entry.since)
        }
        return best?.id
    }

    /// The oldest waiting connection, now served: its resume call, for the caller to make
    /// outside the lock.
    private func nextWaiting() -> (@Sendable () -> Void)? {
        while !queue.isEmpty {
            let id = queue.removeFirst()
            guard var entry = entries[id], !entry.evicted else { continue }
            tick += 1
            entry.waiting = false
            entry.since = tick
            entries[id] = entry
            return entry.resume
        }
        return nil
    }

    /// Marks `id` evicted (its slots are free at once: the close is on its way) and returns its
    /// channel for the caller to close outside the lock.
    private func evict(_ id: ObjectIdentifier, reason: String) -> (any Channel)? {
        guard var entry = entries[id], !entry.evicted else { return nil }
        entry.evicted = true
        entries[id] = entry
        noteClosed(reason, address: entry.address)
        release(address: entry.address)
        return entry.channel
    }

    private func release(address: String) {
        let left = perAddress[address, default: 1] - 1
        perAddress[address] = left > 0 ? left : nil
    }
}

/// The server's caps as Hummingbird's accept gate: the listening socket is read (a connection
/// accepted) only while ``ConnectionRegistry/makeRoom()`` finds room.
struct RegistryAdmission: AvailableConnectionsDelegate {
    let registry: ConnectionRegistry

    mutating func connectionOpened() { registry.connectionAccepted() }
    mutating func connectionClosed() { registry.connectionReleased() }
    func isAcceptingNewConnections() -> Bool { registry.makeRoom() }
}
