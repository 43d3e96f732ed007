import BackupModel
import ConsoleStore
import Foundation

/// Where the sandbox keeps the ids of its sub-organizations, in id order.
///
/// Two homes: ``MemoryDirectory`` (tests, benchmarks, the standalone server) and
/// ``StoreDirectory`` (sandbox tenants, so `seed --orphans` shows up in `list_suborgs`).
public protocol SandboxDirectory: Sendable {
    /// Up to `limit` ids greater than `after` (all from the start when `nil`), ascending.
    func page(after: String?, limit: Int) async throws(ConsoleError) -> [String]
    func contains(_ id: String) async throws(ConsoleError) -> Bool
    /// Removes `id`; returns whether it was there.
    func remove(_ id: String) async throws(ConsoleError) -> Bool
    func count() async throws(ConsoleError) -> Int
    /// Adds `id` (a sub-org just created); an existing one is left alone.
    func insert(_ id: String) async throws(ConsoleError)
    /// The users, keys, providers and policies kept for `id` outside the sandbox's memory (a
    /// simulated world landed in a sandbox tenant), if any.
    func state(of id: String) async throws(ConsoleError) -> SandboxSubOrg?
}

extension SandboxDirectory {
    /// Only a store keeps sub-org state; the sandbox itself holds what it made.
    public func state(of id: String) async throws(ConsoleError) -> SandboxSubOrg? { nil }
}

/// Sub-org ids held as 16-byte keys in one sorted array: a million take 16 MB, not the
/// ~100 MB a million Swift strings would. Sorting the bytes sorts the lowercase UUID text.
public final class MemoryDirectory: SandboxDirectory, @unchecked Sendable {
    /// A UUID as two big-endian words.
    struct Key: Comparable, Hashable {
        var high: UInt64
        var low: UInt64

        static func < (a: Key, b: Key) -> Bool { (a.high, a.low) < (b.high, b.low) }

        init?(_ text: String) {
            let hex = text.utf8.filter { $0 != UInt8(ascii: "-") }
            guard text.utf8.count == 36, hex.count == 32, let bytes = Hex.decode(String(decoding: hex, as: UTF8.self))
            else { return nil }
            high = bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
            low = bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
        }

        var text: String {
            let hex = String(high, radix: 16).leftPad(16) + String(low, radix: 16).leftPad(16)
            let chars = Array(hex)
            return String(chars[0..<8]) + "-" + String(chars[8..<12]) + "-" + String(chars[12..<16]) + "-"
                + String(chars[16..<20]) + "-" + String(chars[20..<32])
        }
    }

    private let lock = NSLock()
    // Guarded by `lock`; sorted, no duplicates.
    private var keys: [Key] = []

    public init(_ ids: some Sequence<String> = []) throws(ConsoleError) {
        try insert(ids)
    }

    /// Adds ids (lowercase UUIDs); existing ones are ignored.
    public func insert(_ ids: some Sequence<String>) throws(ConsoleError) {
        var new: [Key] = []
        for id in ids {
            guard let key = Key(id.lowercased()) else {
                throw .invalid("invalid_suborg_id", "Sandbox sub-org ids are UUIDs, got \(id).")
            }
            new.append(key)
        }
        lock.withLock {
            keys.append(contentsOf: new)
            keys.sort()
            var unique: [Key] = []
            unique.reserveCapacity(keys.count)
            for key in keys where unique.last != key { unique.append(key) }
            keys = unique
        }
    }

    /// Adds `count` ids drawn from `next` (a benchmark's million) without building strings.
    public func insertGenerated(count: Int, next: () -> (UInt64, UInt64)) {
        lock.withLock {
            keys.reserveCapacity(keys.count + count)
            for _ in 0..<count {
                let (high, low) = next()
                var key = Key(high: high, low: low)
                key.high = key.high & ~0xF000 | 0x4000
                key.low = key.low & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
                keys.append(key)
            }
            keys.sort()
        }
    }

    public func page(after: String?, limit: Int) async throws(ConsoleError) -> [String] {
        lock.withLock {
            var start = 0
            if let after { start = upperBound(after) }
            let end = min(keys.count, start + max(0, limit))
            return start < end ? keys[start..<end].map(\.text) : []
        }
    }

    public func contains(_ id: String) async throws(ConsoleError) -> Bool {
        guard let key = Key(id) else { return false }
        return lock.withLock { index(of: key) != nil }
    }

    public func remove(_ id: String) async throws(ConsoleError) -> Bool {
        guard let key = Key(id) else { return false }
        return lock.withLock {
            guard let index = index(of: key) else { return false }
            keys.remove(at: index)
            return true
        }
    }

    public func count() async throws(ConsoleError) -> Int { lock.withLock { keys.count } }

    public func insert(_ id: String) async throws(ConsoleError) { try insert([id]) }

    /// All ids, for saving a small state file.
    public func all() -> [String] { lock.withLock { keys.map(\.text) } }

    private func lowerBound(_ key: Key) -> Int {
        var low = 0
        var high = keys.count
        while low < high {
            let mid = (low + high) / 2
            if keys[mid] < key { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private func index(of key: Key) -> Int? {
        let i = lowerBound(key)
        return i < keys.count && keys[i] == key ? i : nil
    }

    /// First index whose id sorts after the text `after` (which need not be a UUID).
    private func upperBound(_ after: String) -> Int {
        if let key = Key(after.lowercased()) {
            let i = lowerBound(key)
            return i < keys.count && keys[i] == key ? i + 1 : i
        }
        var low = 0
        var high = keys.count
        while low < high {
            let mid = (low + high) / 2
            if keys[mid].text <= after { low = mid + 1 } else { high = mid }
        }
        return low
    }
}

extension MemoryDirectory.Key {
    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }
}

extension String {
    fileprivate func leftPad(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// The sandbox tenant's sub-orgs, read from and deleted in the store's `sandbox_suborgs` table.
public struct StoreDirectory: SandboxDirectory {
    public let store: any SandboxStore
    public let tenant: TenantName

    public init(store: any SandboxStore, tenant: TenantName) {
        self.store = store
        self.tenant = tenant
    }

    public func page(after: String?, limit: Int) async throws(ConsoleError) -> [String] {
        try await store.sandboxSubOrgPage(tenant: tenant, after: after ?? "", limit: limit)
    }

    public func contains(_ id: String) async throws(ConsoleError) -> Bool {
        try await store.sandboxSubOrgExists(tenant: tenant, subOrgId: id)
    }

    public func remove(_ id: String) async throws(ConsoleError) -> Bool {
        try await store.removeSandboxSubOrg(tenant: tenant, subOrgId: id, audit: nil)
    }

    public func count() async throws(ConsoleError) -> Int {
        try await store.sandboxSubOrgCount(tenant: tenant)
    }

    public func insert(_ id: String) async throws(ConsoleError) {
        _ = try await store.addSandboxSubOrgs(
            tenant: tenant, [id], createdAt: Int64(Date().timeIntervalSince1970), audit: nil)
    }

    public func state(of id: String) async throws(ConsoleError) -> SandboxSubOrg? {
        guard let text = try await store.sandboxSubOrgState(tenant: tenant, subOrgId: id) else { return nil }
        do {
            return try JSONDecoder().decode(SandboxSubOrg.self, from: Data(text.utf8))
        } catch {
            throw .internalError("The stored state of sandbox sub-org \(id) does not decode: \(error)")
        }
    }
}
