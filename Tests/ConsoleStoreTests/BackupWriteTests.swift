import BackupModel
import BackupctlTestSupport
import Foundation
import Testing

@testable import ConsoleStore

@Suite("Backups, index and sub-org refs")
struct BackupWriteTests {
    @Test func conflictWritesNothing() async throws {
        try await withStore { store, _ in
            let f = Fixtures()
            let shared = f.credential()
            let first = f.metadata(id: f.backupId(), passkeys: [shared])
            try await store.writeBackup(tenant: alpha, f.write(first), audit: draft("w", tenant: alpha))
            let auditBefore = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000).count

            let second = f.metadata(id: f.backupId(), passkeys: [f.credential(), shared], subOrgs: [f.uuid()])
            let error = await #expect(throws: ConsoleError.self) {
                try await store.writeBackup(
                    tenant: alpha, f.write(second, blob: Data([9])), audit: draft("w", tenant: alpha))
            }
            #expect(error?.code == "factor_conflict")
            #expect(error?.message.contains(shared) == true)
            #expect(error?.message.contains(first.id) == true && error?.message.contains(second.id) == true)
            #expect(try await store.backupExists(tenant: alpha, id: second.id) == false)
            #expect(try await store.lookupRows(tenant: alpha, backupId: second.id).isEmpty)
            #expect(try await store.sealedBlob(tenant: alpha, backupId: second.id) == nil)
            #expect(try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000).count == auditBefore)

            // A batch with one conflicting backup writes none of them.
            let fine = f.metadata(id: f.backupId(), passkeys: [f.credential()])
            await #expect(throws: ConsoleError.self) {
                try await store.writeBackups(
                    tenant: alpha, [f.write(fine), f.write(second)], audit: draft("w", tenant: alpha))
            }
            #expect(try await store.backupExists(tenant: alpha, id: fine.id) == false)
        }
    }

    @Test func aHandedOverFactorChangesHandsInTheTransactionThatClaimsIt() async throws {
        try await withStore { store, _ in
            let outcome = try await FactorHandoverScenario.run(on: store)
            #expect(outcome == FactorHandoverScenario.expected)
        }
    }

    @Test func rewriteReplacesLookupRowsBlobAndRefs() async throws {
        try await withStore { store, _ in
            let f = Fixtures()
            let id = f.backupId()
            let (old, kept, new) = (f.credential(), f.credential(), f.credential())
            let (subA, subB) = (f.uuid(), f.uuid())
            try await store.writeBackup(
                tenant: alpha, f.write(f.metadata(id: id, passkeys: [old, kept], subOrgs: [subA]), blob: Data([1])),
                audit: draft("w"))
            #expect(try await store.subOrgReference(tenant: alpha, subOrgId: subA) == id)
            #expect(try await store.sealedBlob(tenant: alpha, backupId: id) == Data([1]))

            let updated = f.metadata(id: id, passkeys: [kept, new], googleSubs: ["1045"], subOrgs: [subB])
            try await store.writeBackup(tenant: alpha, f.write(updated), audit: draft("w"))
            let rows = try await store.lookupRows(tenant: alpha, backupId: id).map(\.pk)
            #expect(Set(rows) == [passkeyPK(kept), passkeyPK(new), "MAIN#OIDC|https://accounts.google.com|1045"])
            #expect(try await store.lookup(tenant: alpha, pk: passkeyPK(old)) == nil)
            #expect(try await store.subOrgReference(tenant: alpha, subOrgId: subA) == nil)
            #expect(try await store.subOrgReference(tenant: alpha, subOrgId: subB) == id)
            #expect(try await store.sealedBlob(tenant: alpha, backupId: id) == nil)
            let record = try #require(try await store.backup(tenant: alpha, id: id))
            #expect(record.metadata == updated && record.blobSize == nil && record.blobSHA256 == nil)
            #expect(record.importedAt == 100)
        }
    }

    @Test func pagingCoversEverythingInOrder() async throws {
        try await withStore { store, _ in
            let f = Fixtures()
            var writes: [BackupWrite] = []
            for _ in 0..<57 {
                writes.append(
                    f.write(
                        f.metadata(
                            id: f.backupId(), passkeys: [f.credential()], subOrgs: [f.uuid()], sync: [f.credential()])))
            }
            try await store.writeBackups(tenant: alpha, writes, audit: draft("seed", tenant: alpha))
            var ids: [String] = []
            var pages = 0
            try await store.forEachBackup(tenant: alpha, batchSize: 10) { page in
                pages += 1
                #expect(page.count <= 10)
                ids += page.map(\.backupId)
            }
            #expect(pages == 6)
            #expect(ids == writes.map(\.record.backupId).sorted())
            var pks: [String] = []
            try await store.forEachLookupRow(tenant: alpha, batchSize: 7) { pks += $0.map(\.pk) }
            #expect(pks.count == 114 && pks == pks.sorted() && Set(pks).count == 114)
            var subOrgs: [String] = []
            try await store.forEachReferencedSubOrg(tenant: alpha, batchSize: 5) { subOrgs += $0 }
            #expect(subOrgs == writes.flatMap(\.record.metadata.turnkeySubOrgIds).sorted())
            #expect(try await store.backupCount(tenant: alpha) == 57)
            // One audit entry for the whole batch.
            #expect(try await store.auditEntries(tenant: alpha, afterSeq: 0, limit: 100).map(\.action) == ["seed"])
        }
    }

    @Test func rawIndexRowsMayPointAtMissingBackups() async throws {
        try await withStore { store, _ in
            let f = Fixtures()
            let ghost = f.backupId()
            let rows = [LookupRow(pk: passkeyPK(f.credential()), backupId: ghost)]
            let written = try await store.writeLookupRows(tenant: alpha, rows, audit: draft("lookup.import"))
            #expect(written == 1)
            #expect(try await store.writeLookupRows(tenant: alpha, rows, audit: draft("lookup.import")) == 0)
            #expect(try await store.lookup(tenant: alpha, pk: rows[0].pk) == rows[0])
            #expect(try await store.backupExists(tenant: alpha, id: ghost) == false)
        }
    }

    @Test func sandboxSubOrgsAndCleanupJournal() async throws {
        try await withStore { store, _ in
            #expect(try await store.addSandboxSubOrgs(tenant: beta, ["b", "a", "c"], createdAt: 5, audit: nil) == 3)
            #expect(try await store.addSandboxSubOrgs(tenant: beta, ["a", "d"], createdAt: 6, audit: nil) == 1)
            #expect(try await store.removeSandboxSubOrg(tenant: beta, subOrgId: "b", audit: nil))
            var ids: [String] = []
            try await store.forEachSandboxSubOrg(tenant: beta, batchSize: 2) { ids += $0 }
            #expect(ids == ["a", "c", "d"])

            let item = CleanupItemRecord(subOrgId: "s1", reason: "unreferenced", firstSeenAt: 50, updatedAt: 50)
            #expect(try await store.enqueueCleanup(tenant: alpha, [item], audit: nil) == 1)
            var later = item
            later.firstSeenAt = 90
            #expect(try await store.enqueueCleanup(tenant: alpha, [later], audit: draft("cleanup.scan")) == 0)
            #expect(try await store.cleanupItem(tenant: alpha, subOrgId: "s1")?.firstSeenAt == 50)
            var done = try #require(try await store.cleanupItem(tenant: alpha, subOrgId: "s1"))
            #expect(done.version == 0)  // re-queueing that changed nothing did not bump it
            done.state = .deleted
            done.attempts = 1
            done = try await store.updateCleanupItem(tenant: alpha, done, audit: nil)
            #expect(try await store.cleanupItems(tenant: alpha, states: [.deleted]) == [done])
            #expect(try await store.cleanupItems(tenant: alpha, states: [.pending]).isEmpty)
            #expect(try await store.cleanupItem(tenant: beta, subOrgId: "s1") == nil)
            await #expect(throws: ConsoleError.self) {
                try await store.updateCleanupItem(tenant: beta, done, audit: nil)
            }
        }
    }
}
