import Foundation

/// Wall-clock time in unix milliseconds, injected so tests control time.
public struct WallClock: Sendable {
    public let millis: @Sendable () -> Int64

    public init(millis: @escaping @Sendable () -> Int64) {
        self.millis = millis
    }

    public static let system = WallClock { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    public var seconds: Int64 { millis() / 1000 }

    /// A clock tests move by hand.
    public static func manual(_ start: ManualTime) -> WallClock { WallClock { start.now } }
}

/// Mutable time for tests: `let t = ManualTime(ms); clock = .manual(t); t.advance(by:)`.
public final class ManualTime: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Int64

    public init(_ millis: Int64) { value = millis }

    public var now: Int64 { lock.withLock { value } }

    public func advance(byMillis delta: Int64) { lock.withLock { value += delta } }
    public func set(_ millis: Int64) { lock.withLock { value = millis } }
}
