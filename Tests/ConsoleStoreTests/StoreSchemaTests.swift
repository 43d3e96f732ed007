import BackupModel
import Foundation
import GRDB
import Testing

@testable import ConsoleStore

@Suite("Schema and tenant isolation")
struct StoreSchemaTests {
    @Test func migrationsCreateStrictTables() throws {
        try withStore { store, _ in
            let tables = try store.pool.read { db in
                try Row.fetchAll(
                    db,
                    sql:
                        "SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'grdb_%' AND name NOT LIKE 'sqlite_%'"
                ).map { ($0[0] as String, $0[1] as String) }
            }
            let names = Set(tables.map(\.0))
            #expect(
                names.isSuperset(of: [
                    "tenants", "operators", "grants", "backups", "sealed_blobs", "factor_lookup", "suborg_refs",
                    "reset_challenges", "cleanup_items", "audit", "sandbox_suborgs",
                ]))
            for (name, sql) in tables {
                #expect(sql.contains(") STRICT"), "table \(name) is not STRICT")
            }
            let foreignKeys = try store.pool.read { db in try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") }
            #expect(foreignKeys == true)
            let journal = try store.pool.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
            #expect(journal == "wal")
        }
    }

    @Test func fileAndDirectoryAreOwnerOnly() throws {
        try withStore { store, dir in
            let fm = FileManager.default
            let fileMode = try fm.attributesOfItem(atPath: store.path)[.posixPermissions] as? Int
            let dirMode =
                try fm.attributesOfItem(atPath: dir.appendingPathComponent("db").path)[.posixPermissions] as? Int
            #expect(fileMode == 0o600)
            #expect(dirMode == 0o700)
        }
    }

    @Test func checkConstraintsRejectBadRows() throws {
        try withStore { store, _ in
            #expect(throws: (any Error).self) {
                try store.pool.write { db in
                    try db.execute(sql: "INSERT INTO grants (operator, tenant, role) VALUES ('x', 'alpha', 5)")
                }
            }
            #expect(throws: (any Error).self) {
                try store.pool.write { db in
                    try db.execute(
                        sql:
                            "INSERT INTO cleanup_items (tenant, suborg_id, reason, first_seen_at, state, updated_at) VALUES ('alpha', 's', 'r', 1, 'bogus', 1)"
                    )
                }
            }
        }
    }

    @Test func tenantIsolationOnEveryRead() throws {
        try withStore { store, _ in
            let f = Fixtures()
            let id = f.backupId()
            let cred = f.credential()
            let subOrg = f.uuid()
            let metadata = f.metadata(id: id, passkeys: [cred], subOrgs: [subOrg])
            try store.writeBackup(
                tenant: alpha, f.write(metadata, blob: Data([1, 2, 3])), audit: draft("w", tenant: alpha))

            #expect(try store.backup(tenant: alpha, id: id)?.metadata == metadata)
            #expect(try store.backup(tenant: beta, id: id) == nil)
            #expect(try store.backupExists(tenant: beta, id: id) == false)
            #expect(try store.backupCount(tenant: beta) == 0)
            #expect(try store.lookup(tenant: beta, pk: passkeyPK(cred)) == nil)
            #expect(try store.lookupRows(tenant: beta, backupId: id).isEmpty)
            #expect(try store.sealedBlob(tenant: beta, backupId: id) == nil)
            #expect(try store.subOrgReference(tenant: beta, subOrgId: subOrg) == nil)
            var seen = 0
            try store.forEachBackup(tenant: beta, batchSize: 10) { seen += $0.count }
            try store.forEachLookupRow(tenant: beta, batchSize: 10) { seen += $0.count }
            try store.forEachReferencedSubOrg(tenant: beta, batchSize: 10) { seen += $0.count }
            #expect(seen == 0)

            // The same factor may exist in both tenants.
            let other = f.metadata(id: f.backupId(), passkeys: [cred])
            try store.writeBackup(tenant: beta, f.write(other), audit: draft("w", tenant: beta))
            #expect(try store.lookup(tenant: alpha, pk: passkeyPK(cred))?.backupId == id)
            #expect(try store.lookup(tenant: beta, pk: passkeyPK(cred))?.backupId == other.id)
        }
    }

    @Test func operatorsGrantsAndBootstrap() throws {
        try withStore { store, _ in
            let admin = OperatorRecord(name: try OperatorName("root"), canCreateTenants: true, createdAt: 1)
            try store.bootstrap(
                admin: admin, tokenHash: "h1",
                tenant: TenantRecord(name: try TenantName("gamma"), isSandbox: false, createdAt: 1),
                audit: draft("init"))
            #expect(throws: ConsoleError.self) {
                try store.bootstrap(
                    admin: admin, tokenHash: "h2", tenant: TenantRecord(name: alpha, isSandbox: false, createdAt: 1),
                    audit: draft("init"))
            }
            #expect(try store.operatorRecord(tokenHash: "h1") == admin)
            #expect(try store.grants(operator: admin.name).map(\.role) == [.admin])
            let bob = OperatorRecord(name: try OperatorName("bob"), canCreateTenants: false, createdAt: 2)
            try store.addOperator(bob, tokenHash: "h3", audit: draft("operator.add"))
            let error = #expect(throws: ConsoleError.self) {
                try store.addOperator(bob, tokenHash: "h4", audit: draft("operator.add"))
            }
            #expect(error?.kind == .conflict)
            try store.grant(GrantRecord(operatorName: bob.name, tenant: alpha, role: .viewer), audit: draft("grant"))
            try store.grant(GrantRecord(operatorName: bob.name, tenant: alpha, role: .support), audit: draft("grant"))
            #expect(
                try store.grants(tenant: alpha) == [GrantRecord(operatorName: bob.name, tenant: alpha, role: .support)])
            #expect(try store.revoke(operator: bob.name, tenant: alpha, audit: draft("revoke")) == true)
            #expect(try store.revoke(operator: bob.name, tenant: alpha, audit: draft("revoke")) == false)
            #expect(try store.operators().map(\.name.rawValue) == ["bob", "root"])
            #expect(try store.operatorCount() == 2)
            #expect(try store.tenants().map(\.name.rawValue) == ["alpha", "beta", "gamma"])
            #expect(try store.tenant(beta)?.isSandbox == true)
        }
    }
}
