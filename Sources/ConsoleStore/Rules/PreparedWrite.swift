import BackupModel
import Foundation

/// A backup write with everything derived from its metadata computed before the write
/// transaction: the stored JSON, the implied keys and the summary (P-256 checks included).
/// Batches are prepared on every core, so the single writer only runs SQL.
struct PreparedWrite: Sendable {
    let write: BackupWrite
    let metadataJSON: String
    let implied: [ImpliedKey]
    let summary: BackupSummary

    init(_ write: BackupWrite) {
        self.write = write
        let metadata = write.record.metadata
        metadataJSON = String(decoding: metadata.encoded(.stored), as: UTF8.self)
        implied = ImpliedKey.of(metadata)
        summary = BackupSummary(metadata: metadata, blobSize: write.blob == nil ? nil : write.record.blobSize)
    }

    /// Prepares `writes` in order, in parallel when there are enough to be worth it.
    static func all(_ writes: [BackupWrite]) -> [PreparedWrite] {
        guard writes.count >= 64 else { return writes.map(PreparedWrite.init) }
        let slots = PreparedSlots(count: writes.count)
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, writes.count))
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            var local: [(Int, PreparedWrite)] = []
            for i in stride(from: worker, to: writes.count, by: workers) { local.append((i, PreparedWrite(writes[i]))) }
            slots.store(local)
        }
        return slots.take(writes)
    }
}

/// Result slots of ``PreparedWrite/all(_:)``; a lock guards the array.
private final class PreparedSlots: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [PreparedWrite?]

    init(count: Int) { values = Array(repeating: nil, count: count) }

    func store(_ results: [(Int, PreparedWrite)]) {
        lock.withLock { for (i, value) in results { values[i] = value } }
    }

    /// The prepared writes in order; any slot left empty is prepared here.
    func take(_ writes: [BackupWrite]) -> [PreparedWrite] {
        lock.withLock { values.enumerated().map { $1 ?? PreparedWrite(writes[$0]) } }
    }
}
