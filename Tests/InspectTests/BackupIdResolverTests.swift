import BackupModel
import ConsoleStore
import Foundation
import Testing

@testable import Inspect

/// Backup ids typed as prefixes (git-style), and `backups list` over a real store.
@Suite struct BackupIdResolverTests {
    /// A store with `count` backups, each with one passkey.
    static func world(_ count: Int) async throws -> (TempStore, [String]) {
        let t = try await TempStore()
        var ids: [String] = []
        for i in 0..<count {
            let id = try t.backupId()
            try await t.write(
                BackupMetadata(
                    id: id, manifestHash: Hex.encode(t.rng.bytes(32)), factors: [t.passkey([UInt8(i), 1, 2, 3])],
                    syncFactors: [], keys: [.prf(encryptedKey: "aa")]))
            ids.append(id)
        }
        return (t, ids.sorted())
    }

    @Test func prefixesResolveToTheOneBackupTheyName() async throws {
        let (t, ids) = try await Self.world(40)
        let resolver = BackupIdResolver(store: t.store)
        for id in ids {
            let hex = id.dropFirst(BackupAccountID.prefix.count)
            // The shortest prefix no other id shares (at least 4 digits).
            var digits = 4
            while ids.filter({ $0.dropFirst(15).hasPrefix(hex.prefix(digits)) }).count > 1 { digits += 1 }
            await #expect(try resolver.resolve(String(hex.prefix(digits)), tenant: t.tenant) == id)
            await #expect(try resolver.resolve(String(hex.prefix(digits)).uppercased(), tenant: t.tenant) == id)
            await #expect(try resolver.resolve(BackupAccountID.prefix + hex.prefix(digits), tenant: t.tenant) == id)
            await #expect(try resolver.resolve(" \(id) ", tenant: t.tenant) == id)
            // Pasted upper-cased (a spreadsheet, a log viewer): the same backup, not a miss.
            await #expect(try resolver.resolve(id.uppercased(), tenant: t.tenant) == id)
            await #expect(try resolver.resolve(BackupAccountID.prefix + hex.uppercased(), tenant: t.tenant) == id)
            await #expect(try resolver.resolve(String(id.uppercased().prefix(22)), tenant: t.tenant) == id)
            let short = try BackupAccountID(id).abbreviated
            await #expect(try resolver.resolve(short, tenant: t.tenant) == id)
            await #expect(
                try resolver.resolve(short.replacingOccurrences(of: "…", with: "..."), tenant: t.tenant) == id)
        }
    }

    @Test func sharedPrefixesAreAmbiguousAndNameTheCandidates() async throws {
        let (t, ids) = try await Self.world(100)
        let resolver = BackupIdResolver(store: t.store)
        // Every id starts 02 or 03, so 4 digits make 512 buckets: 100 ids share some.
        let groups = Dictionary(grouping: ids) { String($0.dropFirst(15).prefix(4)) }
        let (prefix, members) = try #require(groups.first { $0.value.count > 1 })
        let error = await #expect(throws: ConsoleError.self) { try await resolver.resolve(prefix, tenant: t.tenant) }
        #expect(error?.code == "ambiguous_id" && error?.kind == .invalidInput)
        for member in members { #expect(error?.message.contains(member) == true) }
    }

    @Test func missingAndMalformedIdsSaySo() async throws {
        let (t, ids) = try await Self.world(3)
        let resolver = BackupIdResolver(store: t.store)
        let other = try await t.otherSession()
        for (text, code) in [
            ("ffff", "not_found"), ("zz12", "invalid_backup_account_id"), ("03", "invalid_backup_account_id"),
            ("backup_account_", "invalid_backup_account_id"),
            ("0" + String(repeating: "a", count: 70), "invalid_backup_account_id"),
        ] {
            let error = await #expect(throws: ConsoleError.self) { try await resolver.resolve(text, tenant: t.tenant) }
            #expect(error?.code == code, "\(text)")
        }
        // Another tenant's backups are not found, whatever the prefix.
        let error = await #expect(throws: ConsoleError.self) {
            try await resolver.resolve(String(ids[0].dropFirst(15).prefix(8)), tenant: other.tenantName)
        }
        #expect(error?.code == "not_found")
    }

    @Test func backupsListFiltersByKindHealthAndAge() async throws {
        let (t, ids) = try await Self.world(12)
        let list = BackupList(store: t.store, now: { 1_780_000_000 + 100 * 86_400 })
        let all = try await list.list(.init(limit: 100), session: t.session)
        #expect(all.backups.map(\.backupId) == ids && !all.truncated)
        #expect(all.backups.allSatisfy { $0.factors == ["PASSKEY"] && $0.createdAt == 1_780_000_000 })
        await #expect(try list.list(.init(factorKind: .oidc, limit: 100), session: t.session).backups.isEmpty)
        await #expect(
            try list.list(.init(olderThanSeconds: 99 * 86_400, limit: 100), session: t.session).backups.count == 12)
        await #expect(
            try list.list(.init(newerThanSeconds: 99 * 86_400, limit: 100), session: t.session).backups.isEmpty)
        let page = try await list.list(.init(limit: 5), session: t.session)
        #expect(page.backups.map(\.backupId) == Array(ids.prefix(5)) && page.truncated)
        let statuses = Set(all.backups.map(\.health))
        for status in statuses {
            let only = try await list.list(.init(health: status, limit: 100), session: t.session)
            #expect(!only.backups.isEmpty && only.backups.allSatisfy { $0.health == status })
        }
        await #expect(throws: ConsoleError.self) { try await list.list(.init(limit: 0), session: t.session) }
        let audit = try await t.store.auditEntries(tenant: t.tenant, afterSeq: 0, limit: 1000).filter {
            $0.action == "backup.list"
        }
        #expect(audit.count == 5 + statuses.count)
    }
}
