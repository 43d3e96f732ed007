import BackupModel

/// What a simulation runs: how many users for how many days from which seed, and how often
/// things go wrong. Rates are per request (faults) or per user and day (events).
///
/// The defaults make a busy month: most users sync a few times a week, some add or remove a
/// factor, a few lose a device, delete their account or lose every factor and reset.
public struct SimulationOptions: Codable, Sendable, Equatable {
    public var users: Int
    public var days: Int
    public var seed: UInt64
    /// Unix seconds of day 0, 00:00 UTC; `nil` = `days` before today's midnight.
    public var start: Int64?
    /// Fraction of Turnkey requests that fail transiently (500/503/429) before doing anything.
    public var turnkeyFaults: Double
    /// Fraction of days on which Turnkey is down for every request.
    public var turnkeyOutages: Double
    /// Fraction of Backup Service requests that fail: 500 before any effect, or, on deletions,
    /// after the S3 change and before the FactorLookup one.
    public var serviceFaults: Double
    /// Per device and day: the device is lost.
    public var lostDevices: Double
    /// Per user and day: the user deletes their account (BF-8).
    public var accountDeletions: Double
    /// Per user and day: the user loses every factor and device and resets with the Root Key.
    public var lostEverything: Double
    /// Per device and day: the app syncs a change (BF-4).
    public var syncs: Double
    /// Per user and day: a factor is added (BF-3) or removed (BF-7), a device added (BF-6).
    public var factorAdds: Double
    public var factorDeletes: Double
    public var deviceAdds: Double
    /// Users whose client deletes at Turnkey before the service (an older client).
    public var oldClients: Double
    /// Users whose sub-org was made before the break-glass user existed.
    public var withoutBreakGlass: Double

    public init(
        users: Int, days: Int, seed: UInt64, start: Int64? = nil, turnkeyFaults: Double = 0.05,
        turnkeyOutages: Double = 0.02, serviceFaults: Double = 0.01, lostDevices: Double = 0.002,
        accountDeletions: Double = 0.0005, lostEverything: Double = 0.0003, syncs: Double = 0.15,
        factorAdds: Double = 0.004, factorDeletes: Double = 0.003, deviceAdds: Double = 0.002,
        oldClients: Double = 0.1, withoutBreakGlass: Double = 0.2
    ) {
        self.users = users
        self.days = days
        self.seed = seed
        self.start = start
        self.turnkeyFaults = turnkeyFaults
        self.turnkeyOutages = turnkeyOutages
        self.serviceFaults = serviceFaults
        self.lostDevices = lostDevices
        self.accountDeletions = accountDeletions
        self.lostEverything = lostEverything
        self.syncs = syncs
        self.factorAdds = factorAdds
        self.factorDeletes = factorDeletes
        self.deviceAdds = deviceAdds
        self.oldClients = oldClients
        self.withoutBreakGlass = withoutBreakGlass
    }

    /// The limits the command enforces (bad input gets a one-line error naming the field).
    /// - Throws: ``ConsoleError`` `invalid_simulation`.
    public func validate() throws(ConsoleError) {
        guard (1...1_000_000).contains(users) else { throw Self.invalid("--users must be 1…1000000, got \(users)") }
        guard (1...3650).contains(days) else { throw Self.invalid("--days must be 1…3650, got \(days)") }
        let rates: [(String, Double)] = [
            ("--turnkey-faults", turnkeyFaults), ("--turnkey-outages", turnkeyOutages),
            ("--service-faults", serviceFaults), ("--lost-devices", lostDevices),
            ("--account-deletions", accountDeletions), ("--lost-everything", lostEverything), ("--syncs", syncs),
            ("--factor-adds", factorAdds), ("--factor-deletes", factorDeletes), ("--device-adds", deviceAdds),
            ("--old-clients", oldClients), ("--without-break-glass", withoutBreakGlass),
        ]
        for (name, rate) in rates where !(rate >= 0 && rate <= 1) {
            throw Self.invalid("\(name) must be a fraction between 0 and 1, got \(rate)")
        }
        if let start, !(0...4_102_444_800).contains(start) {
            throw Self.invalid("--start must be between 1970 and 2100, got \(start)")
        }
    }

    /// Day 0 at 00:00 UTC.
    public func startSeconds(now: Int64) -> Int64 {
        start ?? (now / 86_400 - Int64(days)) * 86_400
    }

    static func invalid(_ message: String) -> ConsoleError { .invalid("invalid_simulation", message + ".") }
}
