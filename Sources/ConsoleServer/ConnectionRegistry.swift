import Foundation
import HummingbirdCore
import NIOCore

/// Every open connection of a server, with the phase it is in, so that nobody without a token
/// can hold the server's connection slots.
///
/// Two caps: ``ConnectionLimits/maxConnections`` for the server and
/// ``ConnectionLimits/maxPerAddress`` for one client address. A connection that would pass a
/// cap takes the place of the oldest connection that has not yet sent a whole request head (a
/// new one, a slow one, an idle kept one), of its address first; only when every connection is
/// busy with a request does a new one wait in the kernel's queue (global cap) or get closed at
/// once (its address's cap). A client opening connections as fast as it can therefore only
/// ever pushes out its own idle or unfinished ones, and a valid operator's request is never
/// evicted once its head has arrived.
final class ConnectionRegistry: @unchecked Sendable {
    /// Where a connection stands; only ``idle`` and ``head`` can be evicted.
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

    struct Entry {
        var address: String
        var phase: Phase
        /// When it entered its phase (the oldest evictable one goes first).
        var since: UInt64
        var channel: any Channel
        var evicted = false
    }

    let limits: ConnectionLimits
    private let lock = NSLock()
    // Guarded by `lock`.
    private var entries: [ObjectIdentifier: Entry] = [:]
    private var perAddress: [String: Int] = [:]
    private var tick: UInt64 = 0
    /// Connections accepted and closed, counted as the accept gate sees them (a connection
    /// counts from its accept, before its pipeline registers it here).
    private var accepted = 0
    private var released = 0
    /// The accept gate found no room and nothing to evict: the next connection to go idle
    /// makes room.
    private var acceptBlocked = false
    /// Connections closed by this registry, by reason (for metrics and tests).
    private var closedCounts: [String: Int] = [:]

    init(limits: ConnectionLimits) { self.limits = limits }

    /// Takes a new connection in, evicting an older one if a cap is reached.
    /// - Returns: false when it must be closed at once (its address is at its cap and none of
    ///   that address's connections can make way).
    func admit(_ id: ObjectIdentifier, address: String, channel: any Channel) -> Bool {
        var victims: [any Channel] = []
        let admitted = lock.withLock { () -> Bool in
            if perAddress[address, default: 0] >= limits.maxPerAddress {
                guard let id = oldestEvictable(address: address), let victim = evict(id, reason: "address_cap") else {
                    closedCounts["address_refused", default: 0] += 1
                    return false
                }
                victims.append(victim)
            }
            if occupancy > limits.maxConnections, let id = oldestEvictable(address: nil),
                let victim = evict(id, reason: "server_cap")
            {
                victims.append(victim)
            }
            tick += 1
            entries[id] = Entry(address: address, phase: .head, since: tick, channel: channel)
            perAddress[address, default: 0] += 1
            return true
        }
        for victim in victims { victim.close(promise: nil) }
        return admitted
    }

    /// Moves a connection to `phase`. A connection that goes idle while the accept gate is
    /// closed (every other connection was busy) is closed at once, which reopens the gate: the
    /// connection waiting in the kernel's queue takes its place.
    func setPhase(_ id: ObjectIdentifier, _ phase: Phase) {
        var victim: (any Channel)?
        lock.withLock {
            guard var entry = entries[id], !entry.evicted, entry.phase != phase else { return }
            tick += 1
            entry.phase = phase
            entry.since = tick
            entries[id] = entry
            if phase == .idle, acceptBlocked {
                acceptBlocked = false
                victim = evict(id, reason: "server_cap")
            }
        }
        victim?.close(promise: nil)
    }

    func remove(_ id: ObjectIdentifier) {
        lock.withLock {
            guard let entry = entries.removeValue(forKey: id), !entry.evicted else { return }
            release(address: entry.address)
        }
    }

    /// Counts a connection the guard closed (a timeout), by reason.
    func countClosed(_ reason: String) {
        lock.withLock { closedCounts[reason, default: 0] += 1 }
    }

    /// Whether the server may accept another connection now: there is room under the global
    /// cap, or a connection that ``admit(_:address:channel:)`` can evict for it. It evicts
    /// nothing itself: the listening socket is read whether or not a connection is waiting.
    func makeRoom() -> Bool {
        lock.withLock {
            if occupancy < limits.maxConnections || oldestEvictable(address: nil) != nil { return true }
            acceptBlocked = true
            return false
        }
    }

    /// The accept gate took a connection in (it counts before its pipeline registers it).
    func connectionAccepted() { lock.withLock { accepted += 1 } }

    /// A connection the gate took in has closed.
    func connectionReleased() { lock.withLock { released += 1 } }

    /// Open connections, and those closed by each reason so far.
    var snapshot: (open: Int, closed: [String: Int]) {
        lock.withLock { (occupancy, closedCounts) }
    }

    // MARK: Under the lock

    /// Connections holding a slot: accepted and not closed, minus those being closed for
    /// eviction. It may count a closing connection a moment too long, never too short.
    private var occupancy: Int {
        accepted - released - entries.values.reduce(0) { $0 + ($1.evicted ? 1 : 0) }
    }

    private func oldestEvictable(address: String?) -> ObjectIdentifier? {
        var best: (id: ObjectIdentifier, since: UInt64)?
        for (id, entry) in entries where !entry.evicted && entry.phase.evictable {
            if let address, entry.address != address { continue }
            if let current = best, current.since <= entry.since { continue }
            best = (id, entry.since)
        }
        return best?.id
    }

    /// Marks `id` evicted (its slots are free at once: the close is on its way) and returns its
    /// channel for the caller to close outside the lock.
    private func evict(_ id: ObjectIdentifier, reason: String) -> (any Channel)? {
        guard var entry = entries[id], !entry.evicted else { return nil }
        entry.evicted = true
        entries[id] = entry
        closedCounts[reason, default: 0] += 1
        release(address: entry.address)
        return entry.channel
    }

    private func release(address: String) {
        let left = perAddress[address, default: 1] - 1
        perAddress[address] = left > 0 ? left : nil
    }
}

/// The global cap as Hummingbird's accept gate: the listening socket is read (a connection
/// accepted) only while ``ConnectionRegistry/makeRoom()`` finds room.
struct RegistryAdmission: AvailableConnectionsDelegate {
    let registry: ConnectionRegistry

    mutating func connectionOpened() { registry.connectionAccepted() }
    mutating func connectionClosed() { registry.connectionReleased() }
    func isAcceptingNewConnections() -> Bool { registry.makeRoom() }
}
