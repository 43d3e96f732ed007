/// What `check [BACKUP_ID]` reports: counts by check and status over every backup looked at,
/// and the non-ok findings, capped so that JSON mode still prints one bounded line.
public struct CheckReport: Sendable, Equatable, Codable {
    /// One check's tally.
    public struct CheckSummary: Sendable, Equatable, Codable {
        public var check: String
        public var ok: Int
        public var warn: Int
        public var fail: Int
    }

    /// One non-ok result of one backup.
    public struct Finding: Sendable, Equatable, Codable {
        public var backupId: String
        public var check: String
        public var status: HealthStatus
        public var detail: String
    }

    /// `tenant` or `backup`.
    public var scope: String
    public var tenant: String
    public var backups: Int
    public var backupsFailing: Int
    public var backupsWarning: Int
    public var summary: [CheckSummary]
    /// The first findings in backup id order (those the filter lists), at most the scan's limit.
    public var findings: [Finding]
    public var findingsTotal: Int
    /// How many findings were left out of ``findings``.
    public var findingsOmitted: Int
}

/// Which non-ok results a report lists: `check --failing` and `check --check NAME`. The
/// counts by check and status always cover every result.
public struct FindingFilter: Sendable, Equatable, Codable {
    /// The least severe status listed: `.warn` lists warnings and failures, `.fail` failures only.
    public var minimum: HealthStatus
    /// Only this check's findings, when set.
    public var check: HealthCheckName?
    /// Only this live check's findings (`check --turnkey --check turnkey_…`), when set.
    public var liveCheck: LiveCheckName?

    public init(minimum: HealthStatus = .warn, check: HealthCheckName? = nil, liveCheck: LiveCheckName? = nil) {
        self.minimum = max(minimum, .warn)
        self.check = check
        self.liveCheck = liveCheck
    }

    func lists(_ result: HealthResult) -> Bool {
        guard result.status >= minimum else { return false }
        if let check { return check.rawValue == result.check }
        if let liveCheck { return liveCheck.rawValue == result.check }
        return true
    }
}

/// Accumulates health results; per-page tallies merge into one, keeping the first `limit`
/// findings in (backup id, check) order so the report is the same however pages interleave.
struct CheckTally {
    let limit: Int
    var filter = FindingFilter()
    /// The checks, in report order: the static ones, then (with `--turnkey`) the live ones.
    var names: [String]
    var backups = 0
    var failing = 0
    var warning = 0
    /// [check index][status rank].
    var counts: [[Int]]
    var findings: [(order: Int, finding: CheckReport.Finding)] = []
    var findingsTotal = 0

    static let staticNames = HealthCheckName.allCases.map(\.rawValue)

    init(limit: Int, filter: FindingFilter = FindingFilter(), names: [String] = staticNames) {
        self.limit = limit
        self.filter = filter
        self.names = names
        counts = Array(repeating: [0, 0, 0], count: names.count)
    }

    mutating func add(backupId: String, _ results: [HealthResult]) {
        backups += 1
        var worst = HealthStatus.ok
        for (index, result) in results.enumerated() where index < counts.count {
            counts[index][result.status.rank] += 1
            worst = max(worst, result.status)
            guard result.status != .ok, filter.lists(result) else { continue }
            findingsTotal += 1
            if findings.count < limit {
                findings.append(
                    (
                        index,
                        .init(backupId: backupId, check: result.check, status: result.status, detail: result.detail)
                    ))
            }
        }
        if worst == .fail { failing += 1 } else if worst == .warn { warning += 1 }
    }

    mutating func merge(_ other: CheckTally) {
        backups += other.backups
        failing += other.failing
        warning += other.warning
        for i in counts.indices { for s in 0..<3 { counts[i][s] += other.counts[i][s] } }
        findingsTotal += other.findingsTotal
        findings += other.findings
        findings.sort { ($0.finding.backupId, $0.order) < ($1.finding.backupId, $1.order) }
        if findings.count > limit { findings.removeLast(findings.count - limit) }
    }

    func report(scope: String, tenant: String) -> CheckReport {
        CheckReport(
            scope: scope, tenant: tenant, backups: backups, backupsFailing: failing, backupsWarning: warning,
            summary: zip(names, counts).map {
                CheckReport.CheckSummary(check: $0.0, ok: $0.1[0], warn: $0.1[1], fail: $0.1[2])
            },
            findings: findings.map(\.finding), findingsTotal: findingsTotal,
            findingsOmitted: findingsTotal - findings.count)
    }
}
