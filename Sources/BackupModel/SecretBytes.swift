#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Secret material: root keys, private keys, tokens.
///
/// The bytes live in one heap buffer that is wiped with `explicit_bzero` when the last copy is
/// released, and `description`, `debugDescription` and reflection never show them. Use
/// ``withUnsafeBytes(_:)`` for the few places (C calls) that need the raw bytes.
public struct SecretBytes: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable, Equatable
{
    private final class Storage: @unchecked Sendable {
        // Immutable after init; only read through withUnsafeBytes.
        let pointer: UnsafeMutableRawBufferPointer

        init(count: Int) {
            pointer = .allocate(byteCount: max(count, 1), alignment: 16)
            pointer.initializeMemory(as: UInt8.self, repeating: 0)
            self.count = count
        }

        let count: Int

        deinit {
            if let base = pointer.baseAddress {
                explicit_bzero(base, pointer.count)
            }
            pointer.deallocate()
        }
    }

    private let storage: Storage

    /// Copies `bytes` into wiped-on-release storage. The caller should wipe its own copy.
    public init(_ bytes: some Collection<UInt8>) {
        storage = Storage(count: bytes.count)
        let storage = storage
        let copied = bytes.withContiguousStorageIfAvailable { source -> Bool in
            if let from = source.baseAddress, let to = storage.pointer.baseAddress {
                to.copyMemory(from: from, byteCount: min(source.count, storage.count))
            }
            return true
        }
        if copied == true { return }
        var index = 0
        for byte in bytes {
            storage.pointer[index] = byte
            index += 1
        }
    }

    /// Creates `count` bytes filled in place by `fill`, so the secret is never in a plain array.
    public init(count: Int, fill: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        storage = Storage(count: count)
        try fill(UnsafeMutableRawBufferPointer(rebasing: storage.pointer[0..<count]))
    }

    public var count: Int { storage.count }
    public var isEmpty: Bool { storage.count == 0 }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage.pointer[0..<storage.count]))
    }

    public var description: String { "<redacted \(count) bytes>" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// Constant-time comparison.
    public static func == (lhs: SecretBytes, rhs: SecretBytes) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.withUnsafeBytes { a in
            rhs.withUnsafeBytes { b in
                var diff: UInt8 = 0
                for i in 0..<a.count { diff |= a[i] ^ b[i] }
                return diff == 0
            }
        }
    }
}
