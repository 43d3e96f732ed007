import BackupModel
import BackupctlTestSupport
import Foundation
import GRDB
import Testing

@testable import ConsoleStore
@testable import SQLiteStore

@Suite("Schema and tenant isolation")
struct StoreSchemaTests {
    @Test func migrationsCreateStrictTables() async throws {
        try await withStore { store, _ in
            let tables = try await store.pool.read { db in
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
            let foreignKeys = try await store.pool.read { db in try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") }
            #expect(foreignKeys == true)
            let journal = try await store.pool.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
            #expect(journal == "wal")
        }
    }

    @Test func fileAndDirectoryAreOwnerOnly() async throws {
        try await withStore { store, dir in
            let fm = FileManager.default
            let fileMode = try fm.attributesOfItem(atPath: store.path)[.posixPermissions] as? Int
            let dirMode =
                try fm.attributesOfItem(atPath: dir.appendingPathComponent("db").path)[.posixPermissions] as? Int
            #expect(fileMode == 0o600)
            #expect(dirMode == 0o700)
        }
    }

    /// A database URL handed to the SQLite store is refused before anything is created: as a
    /// path it would become directories named after the URL's user and password.
    @Test func aURLIsRefusedWithoutTouchingTheDisk() throws {
        let url = "postgres://backupctl:s3cret@127.0.0.1:5432/console-\(UUID().uuidString)"
        do {
            _ = try SQLiteConsoleStore(path: url)
            Issue.record("a URL opened as a SQLite file")
        } catch {
            #expect(error.code == "invalid_store_path")
            #expect(!error.message.contains("s3cret") && error.message.contains("postgres://"), "\(error.message)")
        }
        // As a relative path, the URL names a directory under the working directory.
        #expect(!FileManager.default.fileExists(atPath: URL(fileURLWithPath: url).deletingLastPathComponent().path))
        // What stands before `://` is named only when it is a plain scheme.
        do {
            _ = try SQLiteConsoleStore(path: "user:s3cret://host/db")
            Issue.record("a URL opened as a SQLite file")
        } catch {
            #expect(error.code == "invalid_store_path" && !error.message.contains("s3cret"), "\(error.message)")
        }
    }

    /// A path that cannot be the store — empty, a directory, a file that is not SQLite — is a
    /// configuration error naming it, and the file is left as it was.
    @Test func aPathThatIsNotAStoreIsRefusedAndLeftAlone() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paths-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let notes = directory.appendingPathComponent("notes.txt")
        try Data("not a database, just notes\n".utf8).write(to: notes)
        for (path, says) in [
            ("", "is empty"), (directory.path, "is a directory"), (notes.path, "is not a SQLite database"),
        ] {
            do {
                _ = try SQLiteConsoleStore(path: path)
                Issue.record("\(path) opened as a store")
            } catch {
                #expect(error.code == "invalid_store_path" && error.message.contains(says), "\(path): \(error.message)")
            }
        }
        #expect(try Data(contentsOf: notes) == Data("not a database, just notes\n".utf8))
        #expect(!FileManager.default.fileExists(atPath: notes.path + "-wal"))
    }

    @Test func checkConstraintsRejectBadRows() async throws {
        try await withStore { store, _ in
            await #expect(throws: (any Error).self) {
                try await store.pool.write { db in
                    try db.execute(sql: "INSERT INTO grants (operator, tenant, role) VALUES ('x', 'alpha', 5)")
                }
            }
            await #expect(throws: (any Error).self) {
                try await store.pool.write { db in
                    try db.execute(
                        sql:
                            "INSERT INTO cleanup_items (tenant, suborg_id, reason, first_seen_at, state, updated_at) VALUES ('alpha', 's', 'r', 1, 'bogus', 1)"
                    )
                }
            }
        }
    }

    @Test func tenantIsolationOnEveryRead() async throws {
        try await withStore { store, _ in
            let f = Fixtures()
            let id = f.backupId()
            let cred = f.credential()
            let subOrg = f.uuid()
            let metadata = f.metadata(id: id, passkeys: [cred], subOrgs: [subOrg])
            try await store.writeBackup(
                tenant: alpha, f.write(metadata, blob: Data([1, 2, 3])), audit: draft("w", tenant: alpha))

            #expect(try await store.backup(tenant: alpha, id: id)?.metadata == metadata)
            #expect(try await store.backup(tenant: beta, id: id) == nil)
            #expect(try await store.backupExists(tenant: beta, id: id) == false)
            #expect(try await store.backupCount(tenant: beta) == 0)
            #expect(try await store.lookup(tenant: beta, pk: passkeyPK(cred)) == nil)
            #expect(try await store.lookupRows(tenant: beta, backupId: id).isEmpty)
            #expect(try await store.sealedBlob(tenant: beta, backupId: id) == nil)
            #expect(try await store.subOrgReference(tenant: beta, subOrgId: subOrg) == nil)
            var seen = 0
            try await store.forEachBackup(tenant: beta, batchSize: 10) { seen += $0.count }
            try await store.forEachLookupRow(tenant: beta, batchSize: 10) { seen += $0.count }
            try await store.forEachReferencedSubOrg(tenant: beta, batchSize: 10) { seen += $0.count }
            #expect(seen == 0)

            // The same factor may exist in both tenants.
            let other = f.metadata(id: f.backupId(), passkeys: [cred])
            try await store.writeBackup(tenant: beta, f.write(other), audit: draft("w", tenant: beta))
            #expect(try await store.lookup(tenant: alpha, pk: passkeyPK(cred))?.backupId == id)
            #expect(try await store.lookup(tenant: beta, pk: passkeyPK(cred))?.backupId == other.id)
        }
    }

    @Test func operatorsGrantsAndBootstrap() async throws {
        try await withStore { store, _ in
            let admin = OperatorRecord(name: try OperatorName("root"), canCreateTenants: true, createdAt: 1)
            try await store.bootstrap(
                admin: admin, tokenHash: "h1",
                tenant: TenantRecord(name: try TenantName("gamma"), isSandbox: false, createdAt: 1),
                audit: draft("init"))
            await #expect(throws: ConsoleError.self) {
                try await store.bootstrap(
                    admin: admin, tokenHash: "h2", tenant: TenantRecord(name: alpha, isSandbox: false, createdAt: 1),
                    audit: draft("init"))
            }
            #expect(try await store.operatorRecord(tokenHash: "h1") == admin)
            #expect(try await store.grants(operator: admin.name).map(\.role) == [.admin])
            let bob = OperatorRecord(name: try OperatorName("bob"), canCreateTenants: false, createdAt: 2)
            try await store.addOperator(bob, tokenHash: "h3", audit: draft("operator.add"))
            let error = await #expect(throws: ConsoleError.self) {
                try await store.addOperator(bob, tokenHash: "h4", audit: draft("operator.add"))
            }
            #expect(error?.kind == .conflict)
            try await store.grant(
                GrantRecord(operatorName: bob.name, tenant: alpha, role: .viewer), audit: draft("grant"))
            try await store.grant(
                GrantRecord(operatorName: bob.name, tenant: alpha, role: .support), audit: draft("grant"))
            #expect(
                try await store.grants(tenant: alpha) == [
                    GrantRecord(operatorName: bob.name, tenant: alpha, role: .support)
                ])
            #expect(try await store.revoke(operator: bob.name, tenant: alpha, audit: draft("revoke")) == true)
            #expect(try await store.revoke(operator: bob.name, tenant: alpha, audit: draft("revoke")) == false)
            #expect(try await store.operators().map(\.name.rawValue) == ["bob", "root"])
            #expect(try await store.operatorCount() == 2)
            #expect(try await store.tenants().map(\.name.rawValue) == ["alpha", "beta", "gamma"])
            #expect(try await store.tenant(beta)?.isSandbox == true)
        }
    }
}
