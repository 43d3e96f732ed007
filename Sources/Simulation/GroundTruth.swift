import BackupModel
import Foundation

/// What a simulation left behind, as the simulator knows it from the flows it ran and the
/// faults it planned: the answer key for `cleanup scan`, `cleanup ingest-log`, `check` and
/// `check --turnkey`.
public struct GroundTruth: Codable, Sendable, Equatable {
    /// An orphaned sub-org and the flow step that orphaned it.
    public struct Orphan: Codable, Sendable, Equatable {
        public var subOrgId: String
        public var user: Int
        public var backupId: String
        public var step: String
        /// Whether the client logged `remove_factor.turnkey_suborg_orphaned` for it.
        public var logged: Bool
    }

    /// A non-ok health finding a backup must show.
    public struct Finding: Codable, Sendable, Equatable, Hashable {
        public var backupId: String
        public var check: String
        public var status: String

        public init(backupId: String, check: String, status: String) {
            self.backupId = backupId
            self.check = check
            self.status = status
        }
    }

    /// A disagreement between the metadata and the FactorLookup index an import reports.
    public struct Drift: Codable, Sendable, Equatable, Hashable {
        public var backupId: String
        public var pk: String
        public var kind: String

        public init(backupId: String, pk: String, kind: String) {
            self.backupId = backupId
            self.pk = pk
            self.kind = kind
        }
    }

    public var seed: UInt64
    public var users: Int
    public var days: Int
    /// Unix seconds of day 0 and of the end.
    public var start: Int64
    public var end: Int64
    public var options: SimulationOptions
    public var counts: [String: Int]
    /// Backups that exist at the end, sorted.
    public var backups: [String]
    /// Sub-orgs that exist at the end, sorted.
    public var subOrgs: [String]
    public var orphans: [Orphan]
    /// `check` findings (non-ok), by backup then check.
    public var findings: [Finding]
    /// `check --turnkey` findings of the live checks only.
    public var turnkeyFindings: [Finding]
    public var drift: [Drift]
    /// The sub-org ids of the log's `remove_factor.turnkey_suborg_orphaned` lines: what
    /// `cleanup ingest-log` must find.
    public var logged: [String]

    /// The JSON document (sorted keys, pretty), as `ground-truth.json` holds it.
    public func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return (try? encoder.encode(self)) ?? Data()
    }

    public static func load(_ path: String) throws(ConsoleError) -> GroundTruth {
        guard let data = FileManager.default.contents(atPath: path),
            let truth = try? JSONDecoder().decode(GroundTruth.self, from: data)
        else { throw .invalid("invalid_ground_truth", "\(path) is not a simulation's ground-truth.json.") }
        return truth
    }
}

/// What the simulation writes into its output directory, and the summary it reports.
public struct SimulationReport: Codable, Sendable, Equatable {
    public var users: Int
    public var days: Int
    public var seed: UInt64
    public var mode: String
    public var backups: Int
    public var subOrgs: Int
    public var orphans: Int
    public var loggedOrphans: Int
    public var findings: Int
    public var turnkeyFindings: Int
    /// Requests the simulated clients sent to the Backup Service and Turnkey (every attempt).
    public var requests: Int
    public var elapsedSeconds: Double
    /// Simulated user·days per second of wall time.
    public var userDaysPerSecond: Double
    /// The directory holding `ground-truth.json`, `service.log` and (in-process) `export/`.
    public var out: String
    /// When the export's copy was taken (RFC 3339): the `--snapshot-at` of its import.
    public var snapshotAt: String
    public var counts: [String: Int]
    /// The sandbox tenant the world landed in (`sandbox simulate --tenant`).
    public var tenant: String?
}
