import Access
import BackupModel
import ConsoleStore

/// Finds the backup a reset is about, from what the user still knows.
///
/// The walkthrough's "find" step. The console gives it a finder built on the Inspect module's
/// lookup service, so the walkthrough and `lookup` apply the same rules to the same factor
/// (`unauthorized_factor` included).
public protocol BackupFinder: Sendable {
    /// - Throws: ``ConsoleError`` `not_found`, or an `invalid_*` code naming the malformed query.
    func find(_ query: String, session: Session) async throws(ConsoleError) -> BackupRecord
}
