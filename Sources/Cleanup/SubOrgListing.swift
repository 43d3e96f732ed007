import BackupModel
import Turnkey

/// `list_suborgs` of the tenant's parent for `cleanup scan` and `cleanup run`, with the run's
/// retry budget.
///
/// Each page is one ``TurnkeyClient/call(path:body:signer:onAttempt:)`` with the policy's
/// attempts. A page that still fails transiently is asked for again from the last good cursor,
/// after a full-jitter wait (at least its `Retry-After`), each time paid for from the run-wide
/// budget like a deletion's later pass — so one unlucky page no longer ends a run whose
/// deletions would have had the whole budget. When the budget is spent or a page failed
/// ``maxResumes`` times in a row, the listing stops with an error that says how far it got.
struct SubOrgListing {
    /// Times one page is asked for again after its attempts failed.
    static let maxResumes = 6

    let client: TurnkeyClient
    let parent: String
    let tenant: TenantName
    private var pages: SubOrgPages.Iterator
    private(set) var listed = 0
    private(set) var pageCount = 0
    /// Times a page was asked for again in this listing.
    private(set) var resumes = 0

    init(client: TurnkeyClient, parent: String, signer: TurnkeySigner, tenant: TenantName) {
        self.client = client
        self.parent = parent
        self.tenant = tenant
        pages = client.subOrganizations(of: parent, signer: signer).makeAsyncIterator()
    }

    /// The next page, or `nil` once the listing is complete.
    /// - Throws: ``ConsoleError`` (exit 2) naming the sub-orgs and pages listed so far and the
    ///   cursor a rerun would have resumed from.
    mutating func next() async throws(ConsoleError) -> [String]? {
        var failures = 0
        while true {
            do {
                guard let page = try await pages.next() else { return nil }
                listed += page.count
                pageCount += 1
                return page
            } catch {
                failures += 1
                let waitTooLong = (error.retryAfterMillis ?? 0) > client.policy.maxRetryAfterMillis
                guard error.isTransient, !waitTooLong, failures <= Self.maxResumes, client.budget.withdraw() else {
                    throw stopped(error)
                }
                resumes += 1
                let delay = client.policy.delayMillis(
                    retry: failures - 1, retryAfterMillis: error.retryAfterMillis, random: client.random)
                do {
                    try await client.timing.sleep(delay)
                } catch {
                    throw stopped(TurnkeyError(.cancelled, message: "stopped while backing off", attempts: 0))
                }
            }
        }
    }

    private func stopped(_ error: TurnkeyError) -> ConsoleError {
        let from = pages.cursor.map { "after sub-org \($0)" } ?? "at the first page"
        return error.consoleError(
            "Listing the sub-orgs of \(parent) for tenant \(tenant) stopped \(from), having listed \(listed) sub-orgs in \(pageCount) pages (\(resumes) resumed); nothing was deleted and the scan is incomplete — run it again when Turnkey recovers"
        )
    }
}
