import Foundation

/// One benchmark: runs, then reports figures. Each suite measures its subject beside a
/// reference in the same run (a raw C call, a raw SQLite statement), so the ratio is what to
/// read on a noisy machine, not the absolute numbers.
protocol BenchSuite: Sendable {
    var name: String { get }
    func run(_ scale: BenchScale) async throws -> [String: BenchValue]
}

/// `--quick` shrinks every suite (for a smoke run); the default is the size the issues name.
struct BenchScale {
    var quick: Bool
    func pick(_ full: Int, quick small: Int) -> Int { quick ? small : full }
}

enum BenchValue: Encodable {
    case number(Double)
    case integer(Int)
    case text(String)
    case bool(Bool)

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .number(let d): try c.encode((d * 1000).rounded() / 1000)
        case .integer(let i): try c.encode(i)
        case .text(let s): try c.encode(s)
        case .bool(let b): try c.encode(b)
        }
    }
}

/// Monotonic nanoseconds.
func nowNanos() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Times `body` once; seconds.
func timeSeconds(_ body: () throws -> Void) rethrows -> Double {
    let start = nowNanos()
    try body()
    return Double(nowNanos() - start) / 1e9
}

/// Times `body` once, awaiting it; seconds.
func timeSeconds(_ body: () async throws -> Void) async rethrows -> Double {
    let start = nowNanos()
    try await body()
    return Double(nowNanos() - start) / 1e9
}

/// Latency samples in nanoseconds, summarised.
struct Samples {
    var values: [UInt64] = []
    mutating func add(_ nanos: UInt64) { values.append(nanos) }

    func percentile(_ p: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))
        return Double(sorted[index])
    }

    var medianMicros: Double { percentile(0.5) / 1000 }
    var p99Micros: Double { percentile(0.99) / 1000 }
}

/// Peak resident set size of this process so far, in MiB (from /proc/self/status VmHWM).
func peakRSSMiB() -> Double {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        let kb = line.split(separator: " ").compactMap { Double($0) }.first ?? 0
        return kb / 1024
    }
    return 0
}

/// A scratch directory removed at exit of the suite.
func scratchDirectory(_ label: String) -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent(
        "backupctl-bench-\(label)-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
