import Access
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import SQLiteStore

/// The server's throughput under a load generator (wrk, installed by `make bench` from Debian),
/// each figure beside its reference in the same run: `serve` (the release binary) on SQLite
/// with 5,000 seeded backups; `GET /healthz` and the audited `POST /v1/ops/lookup` at 16 and 64
/// connections; `/healthz` from one connection on the probe listener (`--probe-listen`, with
/// `--work-nice` at its default), idle and while 64 connections run lookups, and on the API listener
/// under the same load.
struct ThroughputBench: BenchSuite {
    let name = "throughput"

    func run(_ scale: BenchScale) async throws -> [String: BenchValue] {
        guard BackupctlBinary.exists else {
            return ["error": .text("build the backupctl product in the same configuration first (make bench does)")]
        }
        let environment = ProcessInfo.processInfo.environment
        guard let wrk = try? ChildProcess.resolve("wrk", environment: environment) else {
            return ["error": .text("wrk is not installed: ./scripts/install-deps.sh --wrk (make bench does)")]
        }
        let directory = scratchDirectory("throughput")
        defer { try? FileManager.default.removeItem(at: directory) }
        let backups = scale.pick(5_000, quick: 300)
        let seeded = try await SeededStore(in: directory, backups: backups)
        guard let key = try await seeded.passkeys().first else { return ["error": .text("the seed has no passkey")] }

        var serverEnvironment = environment
        serverEnvironment["XDG_STATE_HOME"] = directory.appendingPathComponent("state").path
        // A production server does not check its own answers against the schema.
        serverEnvironment["BACKUPCTL_CHECK_ANSWERS"] = "0"
        // The throughput points run a server without a probe listener: all its threads at one
        // priority, sharing the cores with wrk as any server would. The probe points run one
        // with `--probe-listen` and its default `--work-nice`, as a deployment with probes does.
        let server = try await ServerProcess.serve(
            db: seeded.path, arguments: ["--operator-rate", "0"], environment: serverEnvironment)
        defer { server.killNow() }

        let tokenText = seeded.tokenText
        let script = directory.appendingPathComponent("lookup.lua")
        try """
        wrk.method = "POST"
        wrk.body = '{"query":{"kind":"passkey","credentialId":"\(key)"}}'
        wrk.headers["Content-Type"] = "application/json"
        wrk.headers["Authorization"] = "Bearer \(tokenText)"
        wrk.headers["Backupctl-Tenant"] = "sandbox"
        """.write(to: script, atomically: true, encoding: .utf8)
        let seconds = scale.pick(8, quick: 2)
        func load(_ url: String, connections: Int, threads: Int = 2, seconds: Int, lua: Bool = false) async throws
            -> WrkFigures
        {
            var arguments = ["-t\(threads)", "-c\(connections)", "-d\(seconds)s", "--latency"]
            if lua { arguments += ["-s", script.path] }
            let result = try await ChildProcess.run(
                wrk, arguments + [url], environment: environment, seconds: Double(seconds) + 60)
            return WrkFigures(result.stdout)
        }

        var figures: [String: BenchValue] = [
            "seededBackups": .integer(backups),
            "lookupToHealthzTargetRatio": .number(0.5), "probeP99UnderLoadTargetMillis": .number(2),
        ]
        // Each point is taken in rounds, the reference and the lookups in turn (each round in the
        // other order than the last): this machine's speed drifts by a quarter within a minute,
        // and two long runs one after the other measured the drift as much as the server. A
        // rate is the mean of its rounds; the ratio is of those means, with the lowest and
        // highest round's own ratio beside it; a p99 is the highest of its rounds'.
        let rounds = scale.pick(4, quick: 2)
        let roundSeconds = max(1, seconds / rounds)
        figures["roundsPerPoint"] = .integer(rounds)
        figures["secondsPerPoint"] = .integer(rounds * roundSeconds)
        for connections in [16, 64] {
            var healthz: [WrkFigures] = []
            var lookups: [WrkFigures] = []
            for round in 0..<rounds {
                for lookupFirst in round % 2 == 0 ? [false, true] : [true, false] {
                    if lookupFirst {
                        lookups.append(
                            try await load(
                                server.url + "/v1/ops/lookup", connections: connections, seconds: roundSeconds,
                                lua: true))
                    } else {
                        healthz.append(
                            try await load(server.url + "/healthz", connections: connections, seconds: roundSeconds))
                    }
                }
            }
            let healthzRate = healthz.map(\.requestsPerSecond).reduce(0, +) / Double(rounds)
            let lookupRate = lookups.map(\.requestsPerSecond).reduce(0, +) / Double(rounds)
            let roundRatios = zip(lookups, healthz).map { $0.requestsPerSecond / max(1, $1.requestsPerSecond) }
            figures["healthzPerSecond\(connections)"] = .number(healthzRate)
            figures["healthzP99Millis\(connections)"] = .number(healthz.map(\.p99Millis).max() ?? 0)
            figures["lookupsPerSecond\(connections)"] = .number(lookupRate)
            figures["lookupP99Millis\(connections)"] = .number(lookups.map(\.p99Millis).max() ?? 0)
            figures["lookupNon2xx\(connections)"] = .integer(lookups.map(\.non2xx).reduce(0, +))
            figures["lookupToHealthzRatio\(connections)"] = .number(lookupRate / max(1, healthzRate))
            figures["lookupToHealthzRoundRatioLowest\(connections)"] = .number(roundRatios.min() ?? 0)
            figures["lookupToHealthzRoundRatioHighest\(connections)"] = .number(roundRatios.max() ?? 0)
        }
        _ = await server.stop()

        let workNice = 10  // serve's default with --probe-listen, named so the figures say it
        let probed = try await ServerProcess.serve(
            db: seeded.path,
            arguments: ["--operator-rate", "0", "--probe-listen", "127.0.0.1:0", "--work-nice", "\(workNice)"],
            environment: serverEnvironment)
        defer { probed.killNow() }
        guard let probes = probed.probesURL else { return ["error": .text("serve announced no probe listener")] }
        let lookupURL = probed.url + "/v1/ops/lookup"
        let idle = try await load(probes + "/healthz", connections: 1, threads: 1, seconds: max(2, seconds / 2))
        figures["probeWorkNice"] = .integer(workNice)
        figures["probeIdleP50Millis"] = .number(idle.p50Millis)
        figures["probeIdleP99Millis"] = .number(idle.p99Millis)
        // The probe and the API's own /healthz from one connection each, while 64 connections
        // run lookups for the whole of both measurements.
        let busy = Task { try await load(lookupURL, connections: 64, threads: 1, seconds: seconds + 4, lua: true) }
        let probe = try await load(probes + "/healthz", connections: 1, threads: 1, seconds: seconds / 2 + 1)
        let api = try await load(probed.url + "/healthz", connections: 1, threads: 1, seconds: seconds / 2)
        let background = try await busy.value
        figures["probeUnderLoadP50Millis"] = .number(probe.p50Millis)
        figures["probeUnderLoadP99Millis"] = .number(probe.p99Millis)
        figures["apiHealthzUnderLoadP99Millis"] = .number(api.p99Millis)
        figures["backgroundLookupsPerSecond"] = .number(background.requestsPerSecond)
        return figures
    }
}

/// What wrk printed: requests per second, latency percentiles, non-2xx answers.
struct WrkFigures {
    var requestsPerSecond = 0.0
    var p50Millis = 0.0
    var p99Millis = 0.0
    var non2xx = 0

    init(_ output: String) {
        for line in output.split(separator: "\n") {
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = words.first, words.count >= 2 else { continue }
            switch first {
            case "Requests/sec:": requestsPerSecond = Double(words[1]) ?? 0
            case "50%": p50Millis = Self.millis(words[1])
            case "99%": p99Millis = Self.millis(words[1])
            case "Non-2xx": non2xx = Int(words.last ?? "") ?? 0
            default: break
            }
        }
    }

    /// wrk's "812.00us", "4.80ms", "1.20s" as milliseconds.
    static func millis(_ text: Substring) -> Double {
        for (unit, factor) in [("us", 0.001), ("ms", 1.0), ("s", 1000.0)] where text.hasSuffix(unit) {
            return (Double(text.dropLast(unit.count)) ?? 0) * factor
        }
        return 0
    }
}
