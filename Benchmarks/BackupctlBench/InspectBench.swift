import Access
import BackupModel
import ConsoleStore
import Foundation
import GRDBSQLite
import Inspect
import SQLiteStore

#if canImport(Glibc)
    import Glibc
#endif

/// Lookups on an N-backup store against the same indexed query through the SQLite C API, and
/// the tenant-wide `check`: backups per second and peak memory.
///
/// Per lookup kind these paths run on every sample, each timed on its share of the samples
/// (a fifth; a third for `account`), those where it is the first to read the key; the rest run
/// after it untimed, to check all agree. `raw` is the plain index query as a prepared sqlite3
/// statement (bind/step/reset), `store` the same through ConsoleStore.lookup,
/// `rawResolve` and `storeResolve` (the lookup's real statement — index row, metadata-implied
/// key, backup existence — raw and through ConsoleStore.resolveLookup), and `resolve`
/// (LookupService's whole read path: input normalisation and that statement; no metadata is
/// decoded). `resolveVsRawResolve` is the console's lookup against the same statement through
/// the C API. `service` adds the audit append every hit costs (one write transaction), timed
/// on every tenth sample in a pass of its own after the others (its keys are warm).
struct InspectBench: BenchSuite {
    let name = "inspect"

    func run(_ scale: BenchScale) async throws -> [String: BenchValue] {
        // BENCH_INSPECT_KEEP=DIR builds the store in DIR and leaves it there, with the admin's
        // token in DIR/token (mode 0600), to profile `backupctl check` on it afterwards.
        let keep = ProcessInfo.processInfo.environment["BENCH_INSPECT_KEEP"].map { URL(fileURLWithPath: $0) }
        let directory = keep ?? scratchDirectory("inspect")
        if let keep {
            try FileManager.default.createDirectory(at: keep, withIntermediateDirectories: true)
        }
        defer { if keep == nil { try? FileManager.default.removeItem(at: directory) } }
        let path = directory.appendingPathComponent("c.db").path
        if keep != nil, FileManager.default.fileExists(atPath: path) {
            return ["error": .text("\(path) exists: BENCH_INSPECT_KEEP needs a directory without a store")]
        }
        // BENCH_INSPECT_BACKUPS overrides the size (for profiling at an intermediate scale).
        let n =
            ProcessInfo.processInfo.environment["BENCH_INSPECT_BACKUPS"].flatMap { Int($0) }
            ?? scale.pick(1_000_000, quick: 5_000)
        var out: [String: BenchValue] = ["backups": .integer(n)]
        let data = InspectBenchData(count: n, samples: scale.pick(2_000, quick: 500))
        let session = try await build(
            path: path, count: n, data: data, tokenFile: keep?.appendingPathComponent("token"), into: &out)
        // Measured on a freshly opened store, as an operator's console opens it: the build's
        // writer cache and heap are gone (returned to the OS), so the check's peak is its own.
        returnFreedMemoryToOS()
        let store = try SQLiteConsoleStore(path: path)
        let tenant = session.tenantName

        let raw = try RawLookup(path: path)
        let service = LookupService(store: store)
        let kinds: [(String, (InspectBenchData.Sample) -> LookupQuery?)] = [
            ("passkey", { .passkey(credentialId: $0.credentialId) }),
            ("oidc", { .oidc(provider: "google", sub: $0.googleSub) }),
            ("keypair", { $0.keychainKey.map { .keypair(publicKey: $0, sync: false) } }),
            ("keypairSync", { .keypair(publicKey: $0.syncKey, sync: true) }),
            ("account", { .account($0.backupId) }),
        ]
        for (kind, makeQuery) in kinds {
            var rawSamples = Samples(), storeSamples = Samples(), resolveSamples = Samples(), serviceSamples = Samples()
            var rawResolveSamples = Samples(), storeResolveSamples = Samples()
            let queries = data.samples.compactMap { sample in makeQuery(sample).map { (sample, $0) } }
            for (index, (sample, query)) in queries.enumerated() {
                let pk = try query.candidateKeys().first?.rawValue ?? sample.backupId
                let t = tenant.rawValue
                // Each sample times ONE path — the first to read its key — and runs the others
                // after it untimed, to check they agree. A path timed on a key another path had
                // just read would find its pages warm (the store's paths share one connection's
                // cache), and the comparison would favour whichever ran second.
                let hit: (LookupService.Outcome) -> Bool = { outcome in
                    if case .hit(let result) = outcome { return result.backupId == sample.backupId }
                    return false
                }
                var runs: [(Int, () async throws -> Bool)] = []
                if kind == "account" {
                    runs = [
                        (0, { raw.backupExists(tenant: t, id: pk) }),
                        (1, { try await store.backupExists(tenant: tenant, id: pk) }),
                        (2, { await hit(try service.resolve(query, tenant: tenant)) }),
                    ]
                } else {
                    runs = [
                        (0, { raw.lookup(tenant: t, pk: pk) }),
                        (1, { try await store.lookup(tenant: tenant, pk: pk) != nil }),
                        (2, { await hit(try service.resolve(query, tenant: tenant)) }),
                        (3, { raw.resolve(tenant: t, pk: pk) }),
                        (4, { try await store.resolveLookup(tenant: tenant, pk: pk)?.factorId != nil }),
                    ]
                }
                let first = index % runs.count
                for (offset, (path, run)) in (runs[first...] + runs[..<first]).enumerated() {
                    let start = nowNanos()
                    let found = try await run()
                    let elapsed = nowNanos() - start
                    guard found else {
                        throw ConsoleError.internalError("inspect bench: \(kind) lookup of sample \(index) missed")
                    }
                    if offset == 0 {
                        switch path {
                        case 0: rawSamples.add(elapsed)
                        case 1: storeSamples.add(elapsed)
                        case 2: resolveSamples.add(elapsed)
                        case 3: rawResolveSamples.add(elapsed)
                        default: storeResolveSamples.add(elapsed)
                        }
                    }
                }
            }
            // With the audit write, on every tenth sample, after the loop: interleaved, the
            // write would disturb whichever path is timed right after it.
            for (_, query) in queries.enumerated().filter({ $0.offset % 10 == 0 }).map(\.element) {
                let start = nowNanos()
                _ = try await service.lookup(query, session: session)
                serviceSamples.add(nowNanos() - start)
            }
            out["\(kind).samples"] = .integer(queries.count)
            out["\(kind).rawMedianMicros"] = .number(rawSamples.medianMicros)
            out["\(kind).rawP99Micros"] = .number(rawSamples.p99Micros)
            out["\(kind).storeMedianMicros"] = .number(storeSamples.medianMicros)
            out["\(kind).storeP99Micros"] = .number(storeSamples.p99Micros)
            out["\(kind).storeVsRawMedianRatio"] = .number(storeSamples.medianMicros / rawSamples.medianMicros)
            out["\(kind).resolveMedianMicros"] = .number(resolveSamples.medianMicros)
            out["\(kind).resolveP99Micros"] = .number(resolveSamples.p99Micros)
            out["\(kind).resolveVsRawMedianRatio"] = .number(resolveSamples.medianMicros / rawSamples.medianMicros)
            if !rawResolveSamples.values.isEmpty {
                // The lookup's real statement (index row + metadata-implied key + existence),
                // raw through the C API and through the store.
                out["\(kind).rawResolveMedianMicros"] = .number(rawResolveSamples.medianMicros)
                out["\(kind).rawResolveP99Micros"] = .number(rawResolveSamples.p99Micros)
                out["\(kind).storeResolveMedianMicros"] = .number(storeResolveSamples.medianMicros)
                out["\(kind).storeResolveP99Micros"] = .number(storeResolveSamples.p99Micros)
                out["\(kind).storeResolveVsRawResolveMedianRatio"] = .number(
                    storeResolveSamples.medianMicros / rawResolveSamples.medianMicros)
                out["\(kind).resolveVsRawResolveMedianRatio"] = .number(
                    resolveSamples.medianMicros / rawResolveSamples.medianMicros)
            }
            out["\(kind).serviceWithAuditMedianMicros"] = .number(serviceSamples.medianMicros)
            out["\(kind).serviceWithAuditP99Micros"] = .number(serviceSamples.p99Micros)
        }

        resetPeakRSS()
        out["rssBeforeCheckMiB"] = .number(peakRSSMiB())
        var report: CheckReport?
        let checkSeconds = try await timeSeconds { report = try await HealthScan(store: store).scan(tenant: tenant) }
        out["checkSeconds"] = .number(checkSeconds)
        out["checkBackupsPerSecond"] = .number(Double(n) / checkSeconds)
        out["checkPeakRSSMiB"] = .number(peakRSSMiB())
        out["checkBackupsSeen"] = .integer(report?.backups ?? 0)
        out["checkFindings"] = .integer(report?.findingsTotal ?? 0)
        // The floor under any check: the store streaming the derived summaries alone.
        var streamed = 0
        let streamSeconds = try await timeSeconds {
            var after: String?
            while true {
                let page = try await store.backupSummaries(tenant: tenant, after: after, limit: 1000)
                streamed += page.count
                guard page.count == 1000, let last = page.last else { break }
                after = last.backupId
            }
        }
        out["streamOnlyBackupsPerSecond"] = .number(Double(streamed) / streamSeconds)
        return out
    }

    /// Builds the store: one write transaction (and audit entry) per 20,000 backups, the next
    /// batch generated on another thread while the store writes this one.
    func build(
        path: String, count n: Int, data: InspectBenchData, tokenFile: URL?, into out: inout [String: BenchValue]
    ) async throws -> Session {
        let store = try SQLiteConsoleStore(path: path)
        let access = AccessService(store: store)
        let token = try await access.bootstrap(admin: try OperatorName("bench"))
        if let tokenFile,
            !FileManager.default.createFile(
                atPath: tokenFile.path, contents: token.withUnsafeBytes { Data($0) },
                attributes: [.posixPermissions: 0o600])
        {
            throw POSIXError(.EACCES)
        }
        let op = try await access.authenticate(token: token)
        let session = try await access.session(operator: op, tenant: try TenantName(AccessService.defaultTenant))
        let batch = 20_000
        let next = PendingBatch()
        next.generate(data, 0..<min(n, batch))
        var makeWaitSeconds = 0.0
        let buildSeconds = try await timeSeconds {
            var start = 0
            while start < n {
                let end = min(n, start + batch)
                var writes: [BackupWrite] = []
                makeWaitSeconds += try timeSeconds { writes = try next.take() }
                if end < n { next.generate(data, end..<min(n, end + batch)) }
                try await store.writeBackups(tenant: session.tenantName, writes, audit: session.audit("bench.build"))
                start = end
                if end % 100_000 == 0 { FileHandle.standardError.write(Data("  built \(end) backups\n".utf8)) }
            }
        }
        out["buildSeconds"] = .number(buildSeconds)
        out["buildWaitingForGeneratorSeconds"] = .number(makeWaitSeconds)
        return session
    }

    /// glibc's `malloc_trim(0)` (not in the Glibc module map), looked up at run time.
    func returnFreedMemoryToOS() {
        #if canImport(Glibc)
            typealias Trim = @convention(c) (Int) -> Int32
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
            _ = unsafeBitCast(symbol, to: Trim.self)(0)
        #endif
    }

    /// Resets VmHWM so the check's peak is not the build's (Linux: `5` to clear_refs).
    func resetPeakRSS() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }
}

/// One batch of generated writes, made on a background thread; `take` waits for it.
final class PendingBatch: @unchecked Sendable {
    private let group = DispatchGroup()
    private var result: Result<[BackupWrite], any Error> = .success([])

    func generate(_ data: InspectBenchData, _ range: Range<Int>) {
        group.enter()
        DispatchQueue.global().async {
            self.result = Result { try range.map { try data.make($0) } }
            self.group.leave()
        }
    }

    func take() throws -> [BackupWrite] {
        group.wait()
        return try result.get()
    }
}
