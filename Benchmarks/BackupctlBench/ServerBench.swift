import Access
import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleClient
import ConsoleService
import ConsoleStore
import Foundation
import Inspect
import SQLiteStore

/// Lookups through `backupctl serve` on loopback against the same lookups in-process
/// (``LocalConsole`` on the same store file), those against the raw reference of an audited
/// lookup (``RawAuditedLookup``: the resolve statement and one audit row in its own
/// transaction, through the C API), and lookups/s with 16 concurrent clients against one
/// client in the same run. The server is the real release binary.
struct ServerBench: BenchSuite {
    let name = "server"

    func run(_ scale: BenchScale) async throws -> [String: BenchValue] {
        guard BackupctlBinary.exists else {
            return ["error": .text("build the backupctl product in the same configuration first (make bench does)")]
        }
        let directory = scratchDirectory("server")
        defer { try? FileManager.default.removeItem(at: directory) }
        let backups = scale.pick(5_000, quick: 300)
        let seeded = try await SeededStore(in: directory, backups: backups)
        let dbPath = seeded.path
        let token = seeded.token
        let queries = try await seeded.passkeys().map { LookupQuery.passkey(credentialId: $0) }
        var serverEnvironment = ProcessInfo.processInfo.environment
        serverEnvironment["XDG_STATE_HOME"] = directory.appendingPathComponent("state").path
        // A production server does not check its own answers against the schema (the tests' do).
        serverEnvironment["BACKUPCTL_CHECK_ANSWERS"] = "0"
        // The bench measures the server, not its per-operator limit (one operator sends them all).
        let server = try await ServerProcess.serve(
            db: dbPath, arguments: ["--operator-rate", "0"], environment: serverEnvironment)
        defer { server.killNow() }
        // The measuring client is a process of its own, set up as `backupctl --server` sets
        // itself up (NIO's event loops as the global executor, see EventLoopTakeover), with the
        // in-process console beside it on the same store so both sides share its machine's drift.
        let tokenFile = directory.appendingPathComponent("token")
        let queriesFile = directory.appendingPathComponent("queries.json")
        try Data(token.withUnsafeBytes { Array($0) }).write(to: tokenFile)
        try JSONEncoder().encode(queries).write(to: queriesFile)
        let figures = try await Self.runClient(
            bench: URL(fileURLWithPath: CommandLine.arguments[0]),
            arguments: [
                Self.clientCommand, server.url, dbPath, tokenFile.path, queriesFile.path,
                scale.quick ? "quick" : "full",
            ])
        return figures.merging([
            "seededBackups": .integer(backups),
            "cores": .integer(ProcessInfo.processInfo.activeProcessorCount),
            "serverToInProcessTargetRatio": .number(1.5),
            "inProcessToRawTargetRatio": .integer(2),
            "serverP99TargetMicros": .integer(2000),
        ]) { $1 }
    }

    /// The first argument that makes `backupctl-bench` the measuring client (main.swift).
    static let clientCommand = "server-client"

    private static func runClient(bench: URL, arguments: [String]) async throws -> [String: BenchValue] {
        let result = try await ChildProcess.run(
            bench.path, arguments, environment: ProcessInfo.processInfo.environment, seconds: 1800)
        guard result.status == 0,
            let figures = try? JSONDecoder().decode([String: Double].self, from: Data(result.stdout.utf8))
        else {
            return ["error": .text("the measuring client failed (\(result.termination)): \(result.stderr.suffix(300))")]
        }
        return figures.mapValues { $0.rounded() == $0 && abs($0) < 1e15 ? .integer(Int($0)) : .number($0) }
    }

    /// The measuring client's entry: `server-client URL DB TOKEN_FILE QUERIES_FILE full|quick`;
    /// prints its figures as one JSON object.
    static func clientMain(_ arguments: [String]) async throws {
        guard arguments.count == 5 else {
            throw ConsoleError.usage("server-client URL DB TOKEN_FILE QUERIES_FILE SCALE")
        }
        let scale = BenchScale(quick: arguments[4] == "quick")
        let token = try OperatorToken.parse(Array(try Data(contentsOf: URL(fileURLWithPath: arguments[2]))))
        let queries = try JSONDecoder().decode(
            [LookupQuery].self, from: try Data(contentsOf: URL(fileURLWithPath: arguments[3])))
        let figures = try await measure(
            local: LocalConsole(storePath: arguments[1]), remote: try RemoteConsole(server: arguments[0]),
            raw: try RawAuditedLookup(path: arguments[1]), caller: Caller(token: token, tenant: "sandbox"),
            queries: queries, scale: scale)
        FileHandle.standardOutput.write(try JSONEncoder().encode(figures))
    }

    private static func measure(
        local: LocalConsole, remote: RemoteConsole, raw: RawAuditedLookup, caller: Caller, queries: [LookupQuery],
        scale: BenchScale
    ) async throws -> [String: Double] {
        let keys = queries.map { (try? $0.candidateKeys().first?.rawValue) ?? "" }

        // Warm both paths (connections, statement caches), then alternate rounds so drift in
        // the machine's load falls on both sides alike.
        let rounds = scale.pick(10, quick: 3)
        let perRound = scale.pick(300, quick: 50)
        for query in queries.prefix(50) {
            _ = try? await local.perform(LookupOperation(query), as: caller)
            _ = try? await remote.perform(LookupOperation(query), as: caller)
        }
        var inProcess = Samples()
        var overHTTP = Samples()
        var rawAudited = Samples()
        // The transport floor: the same client's round trip to the same server for `/healthz`
        // (no token, body or store). A served lookup costs at least this plus the lookup, so
        // `floorPlusInProcessToInProcessMedianRatio` is the lowest server-to-in-process ratio
        // this client and transport allow.
        var floor = Samples()
        var index = 0
        for _ in 0..<rounds {
            for _ in 0..<perRound {
                let query = queries[index % queries.count]
                let key = keys[index % keys.count]
                index += 1
                var start = nowNanos()
                _ = raw.lookup(tenant: "sandbox", pk: key, at: Int64(start / 1_000_000))
                rawAudited.add(nowNanos() - start)
                start = nowNanos()
                _ = try? await local.perform(LookupOperation(query), as: caller)
                inProcess.add(nowNanos() - start)
                start = nowNanos()
                _ = try? await remote.perform(LookupOperation(query), as: caller)
                overHTTP.add(nowNanos() - start)
                start = nowNanos()
                _ = try? await remote.get("/healthz")
                floor.add(nowNanos() - start)
            }
        }

        // Throughput: one client, then 16 concurrent clients, over the same number of lookups.
        let total = scale.pick(8_000, quick: 800)
        let single = try await Self.throughput(
            remote: remote, caller: caller, queries: queries, clients: 1, total: total)
        let sixteen = try await Self.throughput(
            remote: remote, caller: caller, queries: queries, clients: 16, total: total)

        return [
            "inProcessMedianMicros": inProcess.medianMicros,
            "inProcessP99Micros": inProcess.p99Micros,
            "serverMedianMicros": overHTTP.medianMicros,
            "serverP99Micros": overHTTP.p99Micros,
            "serverToInProcessMedianRatio": overHTTP.percentile(0.5) / max(1, inProcess.percentile(0.5)),
            "rawAuditedLookupMedianMicros": rawAudited.medianMicros,
            "transportFloorMedianMicros": floor.medianMicros,
            "floorPlusInProcessToInProcessMedianRatio": (floor.percentile(0.5) + inProcess.percentile(0.5))
                / max(1, inProcess.percentile(0.5)),
            "inProcessToRawMedianRatio": inProcess.percentile(0.5) / max(1, rawAudited.percentile(0.5)),
            "lookupsPerSecond1Client": single,
            "lookupsPerSecond16Clients": sixteen,
            "concurrencyGain16To1": sixteen / max(1, single),
            "lookupsTimed": Double(inProcess.values.count),
        ]
    }

    /// Lookups per second with `clients` concurrent callers sharing `total` lookups.
    static func throughput(
        remote: RemoteConsole, caller: Caller, queries: [LookupQuery], clients: Int, total: Int
    ) async throws -> Double {
        let each = total / clients
        let start = nowNanos()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in 0..<clients {
                group.addTask {
                    for i in 0..<each {
                        let query = queries[(client * each + i) % queries.count]
                        _ = try? await remote.perform(LookupOperation(query), as: caller)
                    }
                }
            }
            try await group.waitForAll()
        }
        return Double(each * clients) / (Double(nowNanos() - start) / 1e9)
    }
}
