import BackupModel

extension TurnkeyClient {
    /// `whoami`: the organization and user the signer's key belongs to.
    public func whoami(organizationId: String, signer: TurnkeySigner) async throws(TurnkeyError)
        -> TurnkeyWire.WhoamiResponse
    {
        try await query(
            TurnkeyWire.WhoamiResponse.self, path: TurnkeyWire.whoamiPath,
            body: TurnkeyWire.OrganizationQuery(organizationId: organizationId), signer: signer)
    }

    /// `list_users` of a sub-org (a parent may read its sub-orgs).
    public func listUsers(organizationId: String, signer: TurnkeySigner) async throws(TurnkeyError)
        -> [TurnkeyWire.User]
    {
        try await query(
            TurnkeyWire.ListUsersResponse.self, path: TurnkeyWire.listUsersPath,
            body: TurnkeyWire.OrganizationQuery(organizationId: organizationId), signer: signer
        ).users
    }

    /// `get_activity`.
    public func getActivity(organizationId: String, activityId: String, signer: TurnkeySigner)
        async throws(TurnkeyError) -> TurnkeyWire.Activity
    {
        try await query(
            TurnkeyWire.ActivityResponse.self, path: TurnkeyWire.getActivityPath,
            body: TurnkeyWire.GetActivityRequest(organizationId: organizationId, activityId: activityId),
            signer: signer
        ).activity
    }

    /// The sub-orgs of `parent`, one page (≤ 100 ids) at a time, fetched as the caller iterates.
    ///
    /// Pages are requested with `limit "100"` and the cursor `after` = the last id of the previous
    /// page; only one page is held at a time, so a million sub-orgs stream through in constant
    /// memory. Iteration throws ``TurnkeyError`` when a page fails after its retries; the
    /// iterator is unchanged then, so calling `next()` again asks for the same page (resuming
    /// from the last good cursor).
    public func subOrganizations(of parent: String, signer: TurnkeySigner) -> SubOrgPages {
        SubOrgPages(client: self, parent: parent, signer: signer.prepared())
    }
}

/// The pages of `list_suborgs`, as an `AsyncSequence` of id arrays.
public struct SubOrgPages: AsyncSequence, Sendable {
    public typealias Element = [String]

    let client: TurnkeyClient
    let parent: String
    let signer: TurnkeySigner

    public func makeAsyncIterator() -> Iterator {
        Iterator(pages: self)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let pages: SubOrgPages
        /// The last id of the last page returned: a failed page is asked for again from here.
        public private(set) var cursor: String?
        var done = false

        init(pages: SubOrgPages) { self.pages = pages }

        public mutating func next() async throws(TurnkeyError) -> [String]? {
            guard !done else { return nil }
            let request = TurnkeyWire.ListSubOrgsRequest(
                organizationId: pages.parent,
                paginationOptions: TurnkeyWire.PaginationOptions(limit: TurnkeyWire.pageLimit, after: cursor))
            let answer = try await pages.client.call(
                path: TurnkeyWire.listSubOrgsPath, body: TurnkeyWire.encode(request), signer: pages.signer)
            guard
                let page = TurnkeyWire.organizationIds(answer.body)
                    ?? TurnkeyWire.decode(TurnkeyWire.ListSubOrgsResponse.self, answer.body)?.organizationIds
            else {
                throw TurnkeyError(
                    .transport, message: "unreadable answer from \(TurnkeyWire.listSubOrgsPath)",
                    attempts: answer.attempts)
            }
            if page.count < (Int(TurnkeyWire.pageLimit) ?? 100) { done = true }
            guard let last = page.last else {
                done = true
                return nil
            }
            if last == cursor {  // a server that ignores the cursor would loop forever
                throw TurnkeyError(.badRequest, message: "list_suborgs returned the same page twice (cursor \(last))")
            }
            cursor = last
            return page
        }
    }
}
