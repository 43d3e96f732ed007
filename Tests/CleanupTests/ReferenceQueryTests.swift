import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Testing

@Suite("which sub-orgs of a page the store references")
struct ReferenceQueryTests {
    @Test(
        "the range scan and the IN fallback both find exactly the referenced ids of a page",
        arguments: TestBackend.available)
    func rangeAndFallback(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(backups: 300, orphanCount: 30, backend: backend)
        defer { Task { await fixture.stop() } }
        let tenant = fixture.session.tenantName
        let referenced = fixture.referenced.sorted()
        #expect(referenced.count > 80)
        // A sorted page mixing both, as list_suborgs returns: the range path.
        let page = Array((referenced.prefix(40) + fixture.orphans).sorted().prefix(60))
        let expected = Set(page).intersection(referenced)
        #expect(try await fixture.store.referencedSubOrgs(tenant: tenant, among: page) == expected)
        // Two far-apart ids with many references between them: the IN fallback.
        let sparse = [referenced[0], try #require(referenced.last)] + fixture.orphans.prefix(2)
        #expect(
            try await fixture.store.referencedSubOrgs(tenant: tenant, among: sparse) == [
                referenced[0], referenced[referenced.count - 1],
            ])
        #expect(try await fixture.store.referencedSubOrgs(tenant: tenant, among: []) == [])
        #expect(try await fixture.store.referencedSubOrgs(tenant: tenant, among: fixture.orphans).isEmpty)
    }
}
