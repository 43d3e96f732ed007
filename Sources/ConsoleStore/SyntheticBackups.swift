import BackupModel

/// Realistic synthetic backups as writes, for the benchmarks and the tests of other stores:
/// backup `i` of `seed` is the same wherever and whenever it is made (``SyntheticBackup``).
public enum SyntheticBackups {
    /// Backups `indices` of `seed`, with timestamps around `now` (unix seconds).
    public static func writes(seed: UInt64, indices: Range<Int>, now: Int64) throws(ConsoleError) -> [BackupWrite] {
        var writes: [BackupWrite] = []
        writes.reserveCapacity(indices.count)
        for index in indices {
            writes.append(try SyntheticBackup.make(seed: seed, index: UInt64(index), now: now).write)
        }
        return writes
    }
}
