import BackupCrypto
import BackupModel
import Foundation
import SandboxIdentity

/// Runs the population through the days, user by user, and keeps the account the ground truth
/// is made of. Not thread-safe: one task drives it.
final class SimulationEngine {
    let options: SimulationOptions
    let service: ServiceCaller
    let turnkey: TurnkeyCaller
    /// The simulated clock the in-process emulators read; `nil` over HTTP (real time).
    let time: ManualTime?
    let start: Int64
    var users: [SimUser] = []
    var day = 0
    var outageToday = false
    /// Sub-orgs that exist, and for each the last step that left it unreferenced.
    var existingSubOrgs: Set<String> = []
    var orphanSteps: [String: (user: Int, step: String, logged: Bool)] = [:]
    /// FactorLookup rows left pointing at a backup that is gone.
    var leftoverRows: [(backupId: String, pk: String)] = []
    var log: [String] = []
    /// Every sub-org a `remove_factor.turnkey_suborg_orphaned` line names.
    var loggedSubOrgs: Set<String> = []
    var counts: [String: Int] = [:]

    init(options: SimulationOptions, service: ServiceCaller, turnkey: TurnkeyCaller, time: ManualTime?, start: Int64) {
        self.options = options
        self.service = service
        self.turnkey = turnkey
        self.time = time
        self.start = start
    }

    /// Unix milliseconds now (the simulated clock, or the real one over HTTP).
    var nowMillis: Int64 { time?.now ?? Int64(Date().timeIntervalSince1970 * 1000) }

    func count(_ name: String, _ n: Int = 1) { counts[name, default: 0] += n }

    /// Every user, in index order, through every day.
    func run(progress: (@Sendable (Int) -> Void)?) async throws(ConsoleError) {
        for index in 0..<options.users {
            users.append(try SimUser(index: index, seed: options.seed, days: options.days, options: options))
        }
        for day in 0..<options.days {
            self.day = day
            outageToday = SeededRandom(seed: options.seed ^ (UInt64(day) &* 0xA24B_AED4_963E_E407)).chance(
                options.turnkeyOutages)
            if outageToday { count("turnkey.outage_days") }
            for user in users {
                // Each user acts at their own hour of the day.
                time?.set((start + Int64(day) * 86_400 + Int64((user.index &* 7919) % 72_000) + 3600) * 1000)
                await live(user)
            }
            progress?(day + 1)
        }
        time?.set((start + Int64(options.days) * 86_400) * 1000)
    }

    /// One user's day.
    func live(_ user: SimUser) async {
        let random = user.random
        switch user.state {
        case .gone: return
        case .waiting:
            if day >= user.joinDay { await create(user) }
            return
        case .active: break
        }
        if user.lockedOut {
            await reset(user)
            return
        }
        if user.activeDevices.isEmpty {
            await addDevice(user)
            return
        }
        if random.chance(options.lostEverything) {
            await loseEverything(user)
            return
        }
        if user.pendingDeletion > 0 || random.chance(options.accountDeletions) {
            await deleteAccount(user)
            if user.state == .gone { return }
        }
        if random.chance(options.factorDeletes) {
            await deleteFactor(user)
            if user.state != .active { return }
        }
        if random.chance(options.factorAdds) { await addFactor(user) }
        if random.chance(options.deviceAdds) { await addDevice(user) }
        for device in user.activeDevices {
            if random.chance(options.lostDevices) {
                user.devices[device].lost = true
                count("devices.lost")
                continue
            }
            if random.chance(options.syncs) { await sync(user, device: device) }
            if random.chance(0.03) { await checkRemote(user, device: device) }
        }
    }

    // MARK: - Faults (planned from the user's generator, so the world is the seed's)

    /// A consuming POST's fault: `unavailable`, or on a deletion also `lookup-delete`.
    func serviceFault(_ user: SimUser, deletion: Bool = false) -> String? {
        guard user.random.chance(options.serviceFaults) else { return nil }
        return deletion && user.random.chance(0.5) ? "lookup-delete" : "unavailable"
    }

    /// The faults of a challenge fetch's three attempts.
    func challengeFaults(_ user: SimUser) -> [String?] {
        (0..<3).map { _ in user.random.chance(options.serviceFaults) ? "unavailable" : nil }
    }

    /// The faults of a Turnkey call's three attempts (all of them on an outage day).
    func turnkeyFaults(_ user: SimUser) -> [String?] {
        if outageToday { return ["unavailable", "unavailable", "unavailable"] }
        return (0..<3).map { _ in
            guard user.random.chance(options.turnkeyFaults) else { return nil }
            return ["unavailable", "internal", "rate_limited"][Int(user.random.uniform(3))]
        }
    }

    // MARK: - The account

    /// A sub-org now exists (it is unreferenced until a backup names it).
    func subOrgCreated(_ id: String, user: SimUser) {
        existingSubOrgs.insert(id)
        orphanSteps[id] = (user.index, "BF-1 sub-org created, no backup names it yet", false)
    }

    /// The sub-org is gone at Turnkey.
    func subOrgDeleted(_ id: String) {
        existingSubOrgs.remove(id)
        orphanSteps[id] = nil
    }

    /// `step` left the sub-org without a backup; `logged` when the client logged it.
    func orphaned(_ id: String, user: SimUser, step: String, logged: Bool) {
        guard existingSubOrgs.contains(id) else { return }
        orphanSteps[id] = (user.index, step, logged)
        count("orphans.\(logged ? "logged" : "silent")")
        if logged {
            loggedSubOrgs.insert(id)
            log.append(
                "\(stamp()) CRITICAL backup_id=\(user.backupId) remove_factor.turnkey_suborg_orphaned suborg_id=\(id) "
                    + "step=\"\(step)\"")
        } else if step.hasPrefix("BF-8") {
            log.append(
                "\(stamp()) ERROR backup_id=\(user.backupId) delete_backup.turnkey_suborg_orphaned suborg_id=\(id)")
        }
    }

    /// An informational service log line.
    func info(_ user: SimUser, _ event: String) {
        log.append("\(stamp()) INFO backup_id=\(user.backupId) \(event)")
    }

    func stamp() -> String {
        let millis = nowMillis
        let text = Timestamp.format(millis / 1000)
        return String(text.dropLast()) + String(format: ".%03dZ", Int(millis % 1000))
    }

    /// The ID token a sign-in SDK returns for the user, bound to `session`.
    func idToken(_ user: SimUser, _ provider: OIDCProvider, session: SimKey) -> String {
        let now = nowMillis / 1000
        let claims = SandboxOIDC.Claims(
            iss: provider.issuer,
            aud: provider == .google ? SandboxOIDC.googleClientId : SandboxOIDC.appleAudiences[0],
            sub: user.subs[provider] ?? "0", email: user.email, iat: now, exp: now + 3600,
            nonce: SandboxOIDC.nonce(sessionPublicKey: session.uncompressed))
        return (try? SandboxOIDC.idToken(claims, provider: provider)) ?? ""
    }
}
