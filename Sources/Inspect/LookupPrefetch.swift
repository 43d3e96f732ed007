import BackupModel
import ConsoleStore
import Synchronization

/// The lookups a run of reads is about to make (a script's read-ahead), resolved together:
/// the first of them made in a tenant reads the index for every key of the run in one read of
/// the store (``ConsoleStore/resolveLookups(tenant:pks:)``), and each lookup then takes its
/// key's answer from that read instead of reading the store on its own.
///
/// Set for the run with ``$current`` by the console that checks its access once
/// (`withOneAccessCheck`), so the run's answers come from one state of the store as its access
/// comes from one access version. Only the lookups of the run take part: a key that is not one
/// of theirs is read as before, and so is every key when the run's read failed (each lookup
/// then meets the store's error itself and reports it on its own line).
public final class LookupPrefetch: Sendable {
    @TaskLocal public static var current: LookupPrefetch?

    private let queries: [LookupQuery]
    /// Per tenant: the keys asked and what the index holds for them; `nil` when the read failed.
    private let read = Mutex<[TenantName: Answers?]>([:])

    private struct Answers {
        var asked: Set<String>
        var found: [String: LookupResolution]
    }

    public init(_ queries: [LookupQuery]) { self.queries = queries }

    /// What the run's read found for `pk` in `tenant`: `.some(nil)` when the index did not hold
    /// it, `nil` when `pk` was not among the run's keys or the read failed (read it yourself).
    func resolution(of pk: String, tenant: TenantName, store: any ConsoleStore) async -> LookupResolution?? {
        let known = read.withLock { $0[tenant] }
        let answers: Answers?
        if let known {
            answers = known
        } else {
            answers = await Self.readAll(queries, tenant: tenant, store: store)
            // The run's lookups are made one after another: a second read of the same run is
            // not expected, and would only repeat the first.
            read.withLock { $0[tenant] = .some(answers) }
        }
        guard let answers, answers.asked.contains(pk) else { return nil }
        return .some(answers.found[pk])
    }

    private static func readAll(_ queries: [LookupQuery], tenant: TenantName, store: any ConsoleStore) async
        -> Answers?
    {
        var asked: [String] = []
        var seen = Set<String>()
        for query in queries {
            // A query that does not parse fails its own line, with its own error.
            guard let keys = try? query.candidateKeys() else { continue }
            for key in keys where seen.insert(key.rawValue).inserted { asked.append(key.rawValue) }
        }
        guard let found = try? await store.resolveLookups(tenant: tenant, pks: asked) else { return nil }
        return Answers(asked: seen, found: found)
    }
}
