import BackupCrypto
import BackupModel
import Foundation
import Turnkey

/// The standalone sandbox's state: a JSON file, mode 0600, next to its two key files.
///
/// A missing file is created with a fresh parent org, a fresh API key (`FILE.api-key`) and
/// cleanup key (`FILE.cleanup-key`), both 0600 hex files usable as `tenant create
/// --turnkey-api-key-file/--cleanup-key-file`, and `subOrgCount` random sub-orgs. The server writes
/// the surviving sub-orgs and every deletion body it received back while it runs (atomically, see
/// ``save(to:)``), so a drill can read them after any stop. Sandbox keys unlock only the emulator.
public struct SandboxStateFile: Codable, Sendable {
    public var parentOrgId: String
    public var apiKeyFile: String
    public var cleanupKeyFile: String
    public var subOrgs: [String]
    /// Explicit users of some sub-orgs (e.g. a break-glass user and no cleanup key).
    public var users: [String: [SandboxUser]]
    public var missingDefaultUsersPerMille: Int
    public var faults: SandboxFaults
    public var seed: UInt64
    /// Every `delete_sub_organization` body received, per sub-org, in order (drills check that
    /// retries and runs after a crash re-sent the same bytes).
    public var deleteBodies: [String: [String]]
    /// Sub-orgs made by `create_sub_organization`: their users, keys, providers, policies.
    public var subOrgDetails: [String: SandboxSubOrg]

    /// Loads `path`, or creates it (and the key files) when it does not exist.
    public static func loadOrCreate(path: String, subOrgCount: Int, random: any RandomSource = SystemRandom())
        throws(ConsoleError) -> SandboxStateFile
    {
        if let data = FileManager.default.contents(atPath: path) {
            do {
                return try JSONDecoder().decode(SandboxStateFile.self, from: data)
            } catch {
                throw .invalid("invalid_state_file", "The sandbox state file \(path) is not valid sandbox JSON.")
            }
        }
        let state = SandboxStateFile(
            parentOrgId: random.uuid(), apiKeyFile: path + ".api-key", cleanupKeyFile: path + ".cleanup-key",
            subOrgs: (0..<max(0, subOrgCount)).map { _ in random.uuid() }.sorted(), users: [:],
            missingDefaultUsersPerMille: 0, faults: .none, seed: random.uniform(UInt64.max), deleteBodies: [:])
        try TurnkeyKeyFile.write(P256.generatePrivateKey(using: random), to: state.apiKeyFile)
        try TurnkeyKeyFile.write(P256.generatePrivateKey(using: random), to: state.cleanupKeyFile)
        try state.save(to: path)
        return state
    }

    /// Writes the file atomically: a 0600 temporary file in the same directory, flushed to disk,
    /// then renamed over `path`, so a reader (or a crash) sees the old state or the new, never half.
    public func save(to path: String) throws(ConsoleError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let temporary = path + ".tmp-\(getpid())"
        guard let data = try? encoder.encode(self),
            FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600])
        else { throw .internalError("Cannot write the sandbox state file \(temporary).") }
        if let handle = FileHandle(forWritingAtPath: temporary) {
            try? handle.synchronize()
            try? handle.close()
        }
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw .internalError("Cannot replace the sandbox state file \(path) (errno \(errno)).")
        }
    }

    /// This state with the sandbox's current sub-orgs and recorded bodies.
    public func updated(from sandbox: TurnkeySandbox, directory: MemoryDirectory) async -> SandboxStateFile {
        var copy = self
        copy.deleteBodies = await sandbox.deleteBodies
        copy.subOrgDetails = await sandbox.details
        copy.subOrgs = directory.all()
        return copy
    }

    /// A sandbox over this state (in memory) and its directory, for saving back.
    public func makeSandbox(timing: TurnkeyTiming = .system) async throws(ConsoleError) -> (
        TurnkeySandbox, MemoryDirectory
    ) {
        let apiKey = try TurnkeyKeyFile.load(apiKeyFile, what: "sandbox API key file")
        let cleanupKey = try TurnkeyKeyFile.load(cleanupKeyFile, what: "sandbox cleanup key file")
        let directory = try MemoryDirectory(subOrgs)
        let sandbox = TurnkeySandbox(
            parentOrgId: parentOrgId, directory: directory,
            parentUsers: [try SandboxTenant.user("sandbox_api_key", apiKey, canDelete: false)],
            defaultSubOrgUsers: [try SandboxTenant.user("sync_factor_user_cleanup", cleanupKey, canDelete: true)],
            missingDefaultUsersPerMille: missingDefaultUsersPerMille, faults: faults, timing: timing, seed: seed)
        for (id, list) in users { await sandbox.setUsers(list, of: id) }
        await sandbox.restoreRecording(deleteBodies)
        await sandbox.restoreDetails(subOrgDetails)
        return (sandbox, directory)
    }

    public init(
        parentOrgId: String, apiKeyFile: String, cleanupKeyFile: String, subOrgs: [String],
        users: [String: [SandboxUser]],
        missingDefaultUsersPerMille: Int, faults: SandboxFaults, seed: UInt64, deleteBodies: [String: [String]] = [:],
        subOrgDetails: [String: SandboxSubOrg] = [:]
    ) {
        self.parentOrgId = parentOrgId
        self.apiKeyFile = apiKeyFile
        self.cleanupKeyFile = cleanupKeyFile
        self.subOrgs = subOrgs
        self.users = users
        self.missingDefaultUsersPerMille = missingDefaultUsersPerMille
        self.faults = faults
        self.seed = seed
        self.deleteBodies = deleteBodies
        self.subOrgDetails = subOrgDetails
    }

    /// `users`, `faults`, `missingDefaultUsersPerMille` and `deleteBodies` may be left out of a
    /// hand-written state file.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            parentOrgId: try c.decode(String.self, forKey: .parentOrgId),
            apiKeyFile: try c.decode(String.self, forKey: .apiKeyFile),
            cleanupKeyFile: try c.decode(String.self, forKey: .cleanupKeyFile),
            subOrgs: try c.decode([String].self, forKey: .subOrgs),
            users: try c.decodeIfPresent([String: [SandboxUser]].self, forKey: .users) ?? [:],
            missingDefaultUsersPerMille: try c.decodeIfPresent(Int.self, forKey: .missingDefaultUsersPerMille) ?? 0,
            faults: try c.decodeIfPresent(SandboxFaults.self, forKey: .faults) ?? .none,
            seed: try c.decodeIfPresent(UInt64.self, forKey: .seed) ?? 1,
            deleteBodies: try c.decodeIfPresent([String: [String]].self, forKey: .deleteBodies) ?? [:],
            subOrgDetails: try c.decodeIfPresent([String: SandboxSubOrg].self, forKey: .subOrgDetails) ?? [:])
    }
}
