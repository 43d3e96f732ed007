import GRDB

/// The store's schema, as one ordered list of GRDB migrations.
///
/// Constraints live here rather than in Swift: every table is `STRICT`, the tenant is part of
/// every key, and `CHECK`s and foreign keys reject what the code should never write. The
/// FactorLookup index deliberately has no foreign key to `backups`: the service's real index
/// drifts and may point at backups that no longer exist, and support must see that as it is.
enum Migrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-schema") { db in
            for sql in v1 { try db.execute(sql: sql) }
        }
        migrator.registerMigration("v2-sandbox-suborgs") { db in
            for sql in v2 { try db.execute(sql: sql) }
        }
        migrator.registerMigration("v3-cleanup-stamped") { db in
            for sql in v3 { try db.execute(sql: sql) }
        }
        migrator.registerMigration("v4-derived-factors") { db in
            for sql in v4 { try db.execute(sql: sql) }
            try SQLiteConsoleStore.backfillDerived(db)
        }
        migrator.registerMigration("v5-live-tenants") { db in
            for sql in v5 { try db.execute(sql: sql) }
        }
        migrator.registerMigration("v6-audit-checkpoints") { db in
            for sql in v6 { try db.execute(sql: sql) }
        }
        migrator.registerMigration("v7-access-version") { db in
            for sql in v7 { try db.execute(sql: sql) }
        }
        migrator.registerMigration("v8-reset-send-claims") { db in
            for sql in v8 { try db.execute(sql: sql) }
        }
        migrator.registerMigration("v9-cleanup-queue") { db in
            for sql in v9 { try db.execute(sql: sql) }
        }
        migrator.registerMigration("v10-sandbox-suborg-state") { db in
            for sql in v10 { try db.execute(sql: sql) }
        }
        // Foreign keys are off while it runs (GRDB's deferred checks): the rebuilt tables'
        // dependants keep their rows.
        migrator.registerMigration("v11-catalog-parity") { db in try CatalogParity.migrate(db) }
        // The audit's hash loses its unique index: every entry's hash is random, so each group
        // commit of entries wrote one leaf page of that index per entry, anywhere in it (most of
        // an audited read's write cost on a large log). The chain itself is what makes an entry's
        // hash its own: each entry's canonical form holds its unique `seq`, and `audit verify`
        // recomputes every hash and link. No query looks an entry up by its hash.
        migrator.registerMigration("v12-audit-hash-unindexed") { db in
            try CatalogParity.rebuild("audit", db) { definition in
                guard let unique = definition.range(of: "hash TEXT NOT NULL UNIQUE CHECK") else { return false }
                definition.replaceSubrange(unique, with: "hash TEXT NOT NULL CHECK")
                return true
            }
        }
        return migrator
    }

    private static let v1: [String] = [
        """
        CREATE TABLE tenants (
            name TEXT NOT NULL PRIMARY KEY,
            is_sandbox INTEGER NOT NULL CHECK (is_sandbox IN (0, 1)),
            turnkey_url TEXT,
            turnkey_org_id TEXT,
            turnkey_api_key_file TEXT,
            cleanup_key_file TEXT,
            policy TEXT NOT NULL CHECK (json_valid(policy)),
            created_at INTEGER NOT NULL
        ) STRICT
        """,
        """
        CREATE TABLE operators (
            name TEXT NOT NULL PRIMARY KEY,
            token_hash TEXT NOT NULL UNIQUE,
            can_create_tenants INTEGER NOT NULL CHECK (can_create_tenants IN (0, 1)),
            created_at INTEGER NOT NULL
        ) STRICT
        """,
        """
        CREATE TABLE grants (
            operator TEXT NOT NULL REFERENCES operators(name) ON DELETE CASCADE,
            tenant TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
            role INTEGER NOT NULL CHECK (role BETWEEN 1 AND 4),
            PRIMARY KEY (operator, tenant)
        ) STRICT, WITHOUT ROWID
        """,
        "CREATE INDEX grants_by_tenant ON grants(tenant, operator)",
        // Metadata rows are 1-3 KB, too large for WITHOUT ROWID to pay off.
        """
        CREATE TABLE backups (
            tenant TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
            backup_id TEXT NOT NULL,
            metadata TEXT NOT NULL,
            manifest_hash TEXT NOT NULL,
            blob_size INTEGER CHECK (blob_size IS NULL OR blob_size BETWEEN 0 AND 15728640),
            blob_sha256 TEXT CHECK (blob_sha256 IS NULL OR length(blob_sha256) = 64),
            imported_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (tenant, backup_id)
        ) STRICT
        """,
        """
        CREATE TABLE sealed_blobs (
            tenant TEXT NOT NULL,
            backup_id TEXT NOT NULL,
            bytes BLOB NOT NULL,
            PRIMARY KEY (tenant, backup_id),
            FOREIGN KEY (tenant, backup_id) REFERENCES backups(tenant, backup_id) ON DELETE CASCADE
        ) STRICT
        """,
        """
        CREATE TABLE factor_lookup (
            tenant TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
            pk TEXT NOT NULL CHECK (pk GLOB 'MAIN#*' OR pk GLOB 'SYNC#*'),
            backup_id TEXT NOT NULL,
            PRIMARY KEY (tenant, pk)
        ) STRICT, WITHOUT ROWID
        """,
        "CREATE INDEX factor_lookup_by_backup ON factor_lookup(tenant, backup_id)",
        """
        CREATE TABLE suborg_refs (
            tenant TEXT NOT NULL,
            suborg_id TEXT NOT NULL,
            backup_id TEXT NOT NULL,
            PRIMARY KEY (tenant, suborg_id, backup_id),
            FOREIGN KEY (tenant, backup_id) REFERENCES backups(tenant, backup_id) ON DELETE CASCADE
        ) STRICT, WITHOUT ROWID
        """,
        "CREATE INDEX suborg_refs_by_backup ON suborg_refs(tenant, backup_id)",
        // No foreign key to backups: a used challenge outlives the backup its reset wiped.
        """
        CREATE TABLE reset_challenges (
            token_hash TEXT NOT NULL PRIMARY KEY,
            tenant TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
            backup_id TEXT NOT NULL,
            context TEXT NOT NULL,
            challenge BLOB NOT NULL,
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL CHECK (expires_at >= created_at),
            used_at INTEGER
        ) STRICT
        """,
        """
        CREATE TABLE cleanup_items (
            tenant TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
            suborg_id TEXT NOT NULL,
            reason TEXT NOT NULL,
            first_seen_at INTEGER NOT NULL,
            state TEXT NOT NULL
                CHECK (state IN ('pending', 'deleted', 'alreadyGone', 'failed', 'needsUser', 'skipped')),
            body TEXT,
            attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            last_error TEXT,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (tenant, suborg_id)
        ) STRICT
        """,
        // The audit outlives tenants and operators, so it names them without foreign keys.
        """
        CREATE TABLE audit (
            seq INTEGER PRIMARY KEY CHECK (seq > 0),
            at INTEGER NOT NULL,
            operator TEXT NOT NULL,
            tenant TEXT,
            action TEXT NOT NULL,
            target TEXT,
            details TEXT NOT NULL CHECK (json_valid(details)),
            prev_hash TEXT NOT NULL CHECK (length(prev_hash) = 64),
            hash TEXT NOT NULL UNIQUE CHECK (length(hash) = 64)
        ) STRICT
        """,
        "CREATE INDEX audit_by_tenant ON audit(tenant, seq)",
    ]

    /// Sub-orgs the Turnkey sandbox lists as the parent org's children (sandbox tenants only).
    private static let v2: [String] = [
        """
        CREATE TABLE sandbox_suborgs (
            tenant TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
            suborg_id TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (tenant, suborg_id)
        ) STRICT, WITHOUT ROWID
        """
    ]

    /// Break-glass deletions stamped by the user (`cleanup submit`), one per journaled sub-org.
    private static let v3: [String] = [
        """
        CREATE TABLE cleanup_stamped (
            tenant TEXT NOT NULL,
            suborg_id TEXT NOT NULL,
            body TEXT NOT NULL CHECK (json_valid(body)),
            stamp TEXT NOT NULL CHECK (length(stamp) > 0),
            submitted_at INTEGER NOT NULL,
            PRIMARY KEY (tenant, suborg_id),
            FOREIGN KEY (tenant, suborg_id) REFERENCES cleanup_items(tenant, suborg_id) ON DELETE CASCADE
        ) STRICT, WITHOUT ROWID
        """
    ]

    /// What reads need of the metadata, derived when a backup is written (an index of the
    /// metadata, which stays the source of truth): the FactorLookup keys it implies, and the
    /// per-backup facts the health checks and `stats` use. Keyed by backup first, so one
    /// backup's keys are contiguous for `check`, and the lookup probe
    /// (tenant, backup_id, pk) is one B-tree descent. Existing backups are backfilled.
    private static let v4: [String] = [
        """
        CREATE TABLE backup_factors (
            tenant TEXT NOT NULL,
            backup_id TEXT NOT NULL,
            pk TEXT NOT NULL CHECK (pk GLOB 'MAIN#*' OR pk GLOB 'SYNC#*'),
            position INTEGER NOT NULL CHECK (position >= 0),
            copies INTEGER NOT NULL CHECK (copies >= 1),
            factor_id TEXT NOT NULL,
            PRIMARY KEY (tenant, backup_id, pk),
            FOREIGN KEY (tenant, backup_id) REFERENCES backups(tenant, backup_id) ON DELETE CASCADE
        ) STRICT, WITHOUT ROWID
        """,
        """
        CREATE TABLE backup_summary (
            tenant TEXT NOT NULL,
            backup_id TEXT NOT NULL,
            main_factors INTEGER NOT NULL CHECK (main_factors >= 0),
            sync_factors INTEGER NOT NULL CHECK (sync_factors >= 0),
            passkeys INTEGER NOT NULL CHECK (passkeys >= 0),
            oidc_factors INTEGER NOT NULL CHECK (oidc_factors >= 0),
            keychain_factors INTEGER NOT NULL CHECK (keychain_factors >= 0),
            prf_keys INTEGER NOT NULL CHECK (prf_keys >= 0),
            icloud_keys INTEGER NOT NULL CHECK (icloud_keys >= 0),
            turnkey_keys INTEGER NOT NULL CHECK (turnkey_keys >= 0),
            unindexed_factors INTEGER NOT NULL CHECK (unindexed_factors >= 0),
            bad_sync_factors INTEGER NOT NULL CHECK (bad_sync_factors >= 0),
            bad_sync_factor_id TEXT,
            bad_sync_problem TEXT,
            malformed_manifest_hash TEXT,
            blob_size INTEGER CHECK (blob_size IS NULL OR blob_size >= 0),
            PRIMARY KEY (tenant, backup_id),
            FOREIGN KEY (tenant, backup_id) REFERENCES backups(tenant, backup_id) ON DELETE CASCADE,
            CHECK ((bad_sync_factors = 0) = (bad_sync_problem IS NULL))
        ) STRICT, WITHOUT ROWID
        """,
    ]

    /// Live tenants: the Backup Service URL, snapshots that know their age, the reset ledger's
    /// send marker, the sandbox service's single-use token set, the last backup that referenced a
    /// queued sub-org, a version for compare-and-set journal updates, and the run lease.
    private static let v5: [String] = [
        "ALTER TABLE tenants ADD COLUMN backup_service_url TEXT",
        """
        CREATE TABLE snapshots (
            tenant TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
            seq INTEGER NOT NULL CHECK (seq > 0),
            snapshot_at INTEGER,
            complete INTEGER NOT NULL CHECK (complete IN (0, 1)),
            imported_at INTEGER NOT NULL,
            backups INTEGER NOT NULL CHECK (backups >= 0),
            retired INTEGER NOT NULL CHECK (retired >= 0),
            PRIMARY KEY (tenant, seq)
        ) STRICT
        """,
        "ALTER TABLE reset_challenges ADD COLUMN sent_at INTEGER",
        "ALTER TABLE reset_challenges ADD COLUMN suborg_ids TEXT CHECK (suborg_ids IS NULL OR json_valid(suborg_ids))",
        """
        CREATE TABLE sandbox_used_tokens (
            tenant TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
            token_hash TEXT NOT NULL CHECK (length(token_hash) = 64),
            used_at INTEGER NOT NULL,
            PRIMARY KEY (tenant, token_hash)
        ) STRICT, WITHOUT ROWID
        """,
        "ALTER TABLE cleanup_items ADD COLUMN last_backup_id TEXT",
        "ALTER TABLE cleanup_items ADD COLUMN version INTEGER NOT NULL DEFAULT 0 CHECK (version >= 0)",
        """
        CREATE TABLE cleanup_leases (
            tenant TEXT NOT NULL PRIMARY KEY REFERENCES tenants(name) ON DELETE CASCADE,
            holder TEXT NOT NULL,
            acquired_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL CHECK (expires_at >= acquired_at)
        ) STRICT
        """,
    ]

    /// Signed audit checkpoints: each names the previous one by hash; no foreign key to `audit`,
    /// so a removed entry is reported by verification rather than refused by the schema.
    private static let v6: [String] = [
        """
        CREATE TABLE audit_checkpoints (
            id INTEGER PRIMARY KEY CHECK (id > 0),
            seq INTEGER NOT NULL CHECK (seq >= 0),
            head_hash TEXT NOT NULL CHECK (length(head_hash) = 64),
            at INTEGER NOT NULL,
            prev_checkpoint_hash TEXT NOT NULL CHECK (length(prev_checkpoint_hash) = 64),
            signature TEXT NOT NULL CHECK (length(signature) > 0)
        ) STRICT
        """
    ]

    /// One number that every change to tenants, operators or grants moves (triggers, so a change
    /// made by any process counts): a session read from the store stays valid exactly while it
    /// is unchanged, so revocation takes effect on the very next call at the cost of one read.
    private static let v7: [String] =
        [
            """
            CREATE TABLE access_version (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                version INTEGER NOT NULL
            ) STRICT
            """,
            "INSERT INTO access_version (id, version) VALUES (1, 0)",
        ]
        + ["tenants", "operators", "grants"].flatMap { table in
            ["INSERT", "UPDATE", "DELETE"].map { event in
                "CREATE TRIGGER access_version_\(table)_\(event.lowercased()) AFTER \(event) ON \(table) "
                    + "BEGIN UPDATE access_version SET version = version + 1; END"
            }
        }

    /// Who is sending a reset to the Backup Service, until when: two consoles (or servers)
    /// completing one token cannot both send it, so an in-flight send by another is never taken
    /// for a lost earlier one.
    private static let v8: [String] = [
        "ALTER TABLE reset_challenges ADD COLUMN sending_by TEXT",
        "ALTER TABLE reset_challenges ADD COLUMN sending_until INTEGER",
    ]

    /// The journal as a queue for cleanup workers (``CleanupQueueStore``): who queued an item,
    /// which worker holds it until when, and the tenant's shared Turnkey rate.
    private static let v9: [String] = [
        "ALTER TABLE cleanup_items ADD COLUMN queued_by TEXT",
        "ALTER TABLE cleanup_items ADD COLUMN queued_at INTEGER",
        "ALTER TABLE cleanup_items ADD COLUMN claimed_by TEXT",
        "ALTER TABLE cleanup_items ADD COLUMN lease_expires_at INTEGER",
        """
        CREATE TABLE cleanup_rate (
            tenant TEXT NOT NULL PRIMARY KEY REFERENCES tenants(name) ON DELETE CASCADE,
            tat_micros INTEGER NOT NULL
        ) STRICT
        """,
    ]

    /// A sandbox sub-org's Turnkey state (its users, API keys, authenticators, OIDC providers and
    /// policies, as the Turnkey sandbox keeps them): `sandbox simulate --tenant` lands a simulated
    /// world here, and the tenant's in-process Turnkey answers from it. `NULL` for sub-orgs that
    /// `import` and `seed` record (the sandbox gives those its default users).
    private static let v10: [String] = [
        "ALTER TABLE sandbox_suborgs ADD COLUMN state TEXT CHECK (state IS NULL OR json_valid(state))"
    ]
}
