/// The PostgreSQL store's schema, as an ordered list of migrations (``PostgresMigrator`` applies them).
///
/// It holds what the SQLite store's migrations v1-v7 hold, written for PostgreSQL: BIGINT unix
/// milliseconds, BOOLEAN flags, BYTEA bytes, the tenant in every key, the same uniqueness and the
/// indexes the queries use, `CHECK`s and foreign keys for what the code should never write. Keys
/// and sorted text use the "C" collation, so `ORDER BY` compares bytes as SQLite does whatever
/// the database's locale. JSON columns stay TEXT (the audit hashes the exact text; `jsonb` would
/// rewrite it), checked by `json_text_valid`. As in SQLite, FactorLookup has no foreign key to
/// `backups` (the service's real index drifts), a used reset challenge outlives its backup, and
/// the audit names tenants and operators without foreign keys.
enum PostgresSchema {
    /// Append only: a released migration never changes, the next change is a new version.
    static let migrations: [PostgresMigration] = [
        PostgresMigration(version: 1, name: "schema", statements: v1),
        PostgresMigration(version: 2, name: "access-version", statements: v2),
        PostgresMigration(version: 3, name: "cleanup-claims", statements: v3),
        PostgresMigration(version: 4, name: "cleanup-rate", statements: v4),
        PostgresMigration(version: 5, name: "reset-send-claims", statements: v5),
        PostgresMigration(version: 6, name: "cleanup-queue", statements: v6),
        PostgresMigration(version: 7, name: "sandbox-suborg-state", statements: v7),
        PostgresMigration(version: 8, name: "audit-hash-unindexed", statements: v8),
    ]

    /// A text column compared and sorted bytewise.
    private static let key = #"TEXT COLLATE "C" NOT NULL"#

    private static let v1: [String] = [
        """
        CREATE FUNCTION json_text_valid(doc TEXT) RETURNS BOOLEAN LANGUAGE plpgsql IMMUTABLE STRICT AS $$
        BEGIN
            PERFORM doc::json;
            RETURN TRUE;
        EXCEPTION WHEN others THEN
            RETURN FALSE;
        END
        $$
        """,
        """
        CREATE TABLE tenants (
            name \(key) PRIMARY KEY,
            is_sandbox BOOLEAN NOT NULL,
            turnkey_url TEXT,
            turnkey_org_id TEXT,
            turnkey_api_key_file TEXT,
            cleanup_key_file TEXT,
            backup_service_url TEXT,
            policy TEXT NOT NULL CHECK (json_text_valid(policy)),
            created_at BIGINT NOT NULL
        )
        """,
        """
        CREATE TABLE operators (
            name \(key) PRIMARY KEY,
            token_hash TEXT NOT NULL UNIQUE,
            can_create_tenants BOOLEAN NOT NULL,
            created_at BIGINT NOT NULL
        )
        """,
        """
        CREATE TABLE grants (
            operator \(key) REFERENCES operators(name) ON DELETE CASCADE,
            tenant \(key) REFERENCES tenants(name) ON DELETE CASCADE,
            role SMALLINT NOT NULL CHECK (role BETWEEN 1 AND 4),
            PRIMARY KEY (operator, tenant)
        )
        """,
        "CREATE INDEX grants_by_tenant ON grants (tenant, operator)",
        """
        CREATE TABLE backups (
            tenant \(key) REFERENCES tenants(name) ON DELETE CASCADE,
            backup_id \(key),
            metadata TEXT NOT NULL,
            manifest_hash TEXT NOT NULL,
            blob_size BIGINT CHECK (blob_size IS NULL OR blob_size BETWEEN 0 AND 15728640),
            blob_sha256 TEXT CHECK (blob_sha256 IS NULL OR length(blob_sha256) = 64),
            imported_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL,
            PRIMARY KEY (tenant, backup_id)
        )
        """,
        """
        CREATE TABLE sealed_blobs (
            tenant \(key),
            backup_id \(key),
            bytes BYTEA NOT NULL,
            PRIMARY KEY (tenant, backup_id),
            FOREIGN KEY (tenant, backup_id) REFERENCES backups (tenant, backup_id) ON DELETE CASCADE
        )
        """,
        // Sealed blobs are ciphertext: storing them out of line uncompressed saves a futile compression.
        "ALTER TABLE sealed_blobs ALTER COLUMN bytes SET STORAGE EXTERNAL",
        """
        CREATE TABLE factor_lookup (
            tenant \(key) REFERENCES tenants(name) ON DELETE CASCADE,
            pk \(key) CHECK (left(pk, 5) IN ('MAIN#', 'SYNC#')),
            backup_id \(key),
            PRIMARY KEY (tenant, pk)
        )
        """,
        "CREATE INDEX factor_lookup_by_backup ON factor_lookup (tenant, backup_id, pk)",
        """
        CREATE TABLE suborg_refs (
            tenant \(key),
            suborg_id \(key),
            backup_id \(key),
            PRIMARY KEY (tenant, suborg_id, backup_id),
            FOREIGN KEY (tenant, backup_id) REFERENCES backups (tenant, backup_id) ON DELETE CASCADE
        )
        """,
        "CREATE INDEX suborg_refs_by_backup ON suborg_refs (tenant, backup_id, suborg_id)",
        """
        CREATE TABLE backup_factors (
            tenant \(key),
            backup_id \(key),
            pk \(key) CHECK (left(pk, 5) IN ('MAIN#', 'SYNC#')),
            position INTEGER NOT NULL CHECK (position >= 0),
            copies INTEGER NOT NULL CHECK (copies >= 1),
            factor_id TEXT NOT NULL,
            PRIMARY KEY (tenant, backup_id, pk),
            FOREIGN KEY (tenant, backup_id) REFERENCES backups (tenant, backup_id) ON DELETE CASCADE
        )
        """,
        """
        CREATE TABLE backup_summary (
            tenant \(key),
            backup_id \(key),
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
            blob_size BIGINT CHECK (blob_size IS NULL OR blob_size >= 0),
            PRIMARY KEY (tenant, backup_id),
            FOREIGN KEY (tenant, backup_id) REFERENCES backups (tenant, backup_id) ON DELETE CASCADE,
            CHECK ((bad_sync_factors = 0) = (bad_sync_problem IS NULL))
        )
        """,
        """
        CREATE TABLE snapshots (
            tenant \(key) REFERENCES tenants(name) ON DELETE CASCADE,
            seq BIGINT NOT NULL CHECK (seq > 0),
            snapshot_at BIGINT,
            complete BOOLEAN NOT NULL,
            imported_at BIGINT NOT NULL,
            backups BIGINT NOT NULL CHECK (backups >= 0),
            retired BIGINT NOT NULL CHECK (retired >= 0),
            PRIMARY KEY (tenant, seq)
        )
        """,
        """
        CREATE TABLE reset_challenges (
            token_hash TEXT NOT NULL PRIMARY KEY,
            tenant \(key) REFERENCES tenants(name) ON DELETE CASCADE,
            backup_id \(key),
            context TEXT NOT NULL,
            challenge BYTEA NOT NULL,
            created_at BIGINT NOT NULL,
            expires_at BIGINT NOT NULL CHECK (expires_at >= created_at),
            used_at BIGINT,
            sent_at BIGINT,
            suborg_ids TEXT CHECK (json_text_valid(suborg_ids))
        )
        """,
        """
        CREATE TABLE sandbox_suborgs (
            tenant \(key) REFERENCES tenants(name) ON DELETE CASCADE,
            suborg_id \(key),
            created_at BIGINT NOT NULL,
            PRIMARY KEY (tenant, suborg_id)
        )
        """,
        """
        CREATE TABLE sandbox_used_tokens (
            tenant \(key) REFERENCES tenants(name) ON DELETE CASCADE,
            token_hash TEXT NOT NULL CHECK (length(token_hash) = 64),
            used_at BIGINT NOT NULL,
            PRIMARY KEY (tenant, token_hash)
        )
        """,
        """
        CREATE TABLE cleanup_items (
            tenant \(key) REFERENCES tenants(name) ON DELETE CASCADE,
            suborg_id \(key),
            reason TEXT NOT NULL,
            first_seen_at BIGINT NOT NULL,
            state TEXT NOT NULL
                CHECK (state IN ('pending', 'deleted', 'alreadyGone', 'failed', 'needsUser', 'skipped')),
            body TEXT,
            attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            last_error TEXT,
            updated_at BIGINT NOT NULL,
            last_backup_id TEXT,
            version BIGINT NOT NULL DEFAULT 0 CHECK (version >= 0),
            PRIMARY KEY (tenant, suborg_id)
        )
        """,
        """
        CREATE TABLE cleanup_stamped (
            tenant \(key),
            suborg_id \(key),
            body TEXT NOT NULL CHECK (json_text_valid(body)),
            stamp TEXT NOT NULL CHECK (length(stamp) > 0),
            submitted_at BIGINT NOT NULL,
            PRIMARY KEY (tenant, suborg_id),
            FOREIGN KEY (tenant, suborg_id) REFERENCES cleanup_items (tenant, suborg_id) ON DELETE CASCADE
        )
        """,
        """
        CREATE TABLE cleanup_leases (
            tenant \(key) PRIMARY KEY REFERENCES tenants(name) ON DELETE CASCADE,
            holder TEXT NOT NULL,
            acquired_at BIGINT NOT NULL,
            expires_at BIGINT NOT NULL CHECK (expires_at >= acquired_at)
        )
        """,
        """
        CREATE TABLE audit (
            seq BIGINT PRIMARY KEY CHECK (seq > 0),
            at BIGINT NOT NULL,
            operator TEXT NOT NULL,
            tenant TEXT COLLATE "C",
            action TEXT NOT NULL,
            target TEXT,
            details TEXT NOT NULL CHECK (json_text_valid(details)),
            prev_hash TEXT NOT NULL CHECK (length(prev_hash) = 64),
            hash TEXT NOT NULL UNIQUE CHECK (length(hash) = 64)
        )
        """,
        "CREATE INDEX audit_by_tenant ON audit (tenant, seq)",
        // No foreign key to `audit`: a removed entry is reported by verification, not refused here.
        """
        CREATE TABLE audit_checkpoints (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY CHECK (id > 0),
            seq BIGINT NOT NULL CHECK (seq >= 0),
            head_hash TEXT NOT NULL CHECK (length(head_hash) = 64),
            at BIGINT NOT NULL,
            prev_checkpoint_hash TEXT NOT NULL CHECK (length(prev_checkpoint_hash) = 64),
            signature TEXT NOT NULL CHECK (length(signature) > 0)
        )
        """,
    ]

    /// One number that every row change to tenants, operators or grants moves, by any process:
    /// a cached session stays valid exactly while it is unchanged (SQLite's v7, as PL/pgSQL).
    private static let v2: [String] =
        [
            """
            CREATE TABLE access_version (
                id SMALLINT PRIMARY KEY CHECK (id = 1),
                version BIGINT NOT NULL
            )
            """,
            "INSERT INTO access_version (id, version) VALUES (1, 0)",
            """
            CREATE FUNCTION bump_access_version() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE access_version SET version = version + 1 WHERE id = 1;
                RETURN NULL;
            END
            $$
            """,
        ]
        + ["tenants", "operators", "grants"].map { table in
            "CREATE TRIGGER access_version_\(table) AFTER INSERT OR UPDATE OR DELETE ON \(table) "
                + "FOR EACH ROW EXECUTE FUNCTION bump_access_version()"
        }

    /// Cleanup items claimed by one of several workers: `FOR UPDATE SKIP LOCKED` over the pending
    /// items of a tenant in sub-org order, and a lease (holder and expiry, both or neither) that
    /// another worker may take over once it has expired.
    private static let v3: [String] = [
        """
        ALTER TABLE cleanup_items
            ADD COLUMN claimed_by TEXT,
            ADD COLUMN lease_expires_at BIGINT,
            ADD CONSTRAINT cleanup_items_claim CHECK ((claimed_by IS NULL) = (lease_expires_at IS NULL))
        """,
        "CREATE INDEX cleanup_items_by_state ON cleanup_items (tenant, state, suborg_id)",
    ]

    /// The rate limit a tenant's cleanup workers share, wherever they run: the theoretical
    /// arrival time (unix microseconds) of the next Turnkey call of the generic cell rate
    /// algorithm (``PostgresRateLimiter``).
    private static let v4: [String] = [
        """
        CREATE TABLE cleanup_rate (
            tenant \(key) PRIMARY KEY REFERENCES tenants(name) ON DELETE CASCADE,
            tat_micros BIGINT NOT NULL
        )
        """
    ]

    /// Who is sending a reset to the Backup Service, until when (SQLite's v8): two servers
    /// completing one token cannot both send it.
    private static let v5: [String] = [
        """
        ALTER TABLE reset_challenges
            ADD COLUMN sending_by TEXT,
            ADD COLUMN sending_until BIGINT,
            ADD CONSTRAINT reset_challenges_sending CHECK ((sending_by IS NULL) = (sending_until IS NULL))
        """
    ]

    /// Who queued a cleanup item for the workers, and when (SQLite's v9; the claim columns are v3's).
    private static let v6: [String] = [
        "ALTER TABLE cleanup_items ADD COLUMN queued_by TEXT, ADD COLUMN queued_at BIGINT",
        "CREATE INDEX cleanup_items_queued ON cleanup_items (tenant, suborg_id) WHERE queued_at IS NOT NULL AND state = 'pending'",
    ]

    /// A sandbox sub-org's Turnkey state (SQLite's v10).
    private static let v7: [String] = [
        "ALTER TABLE sandbox_suborgs ADD COLUMN state TEXT CHECK (state IS NULL OR json_text_valid(state))"
    ]

    /// The audit's hash loses its unique index, as in SQLite's v12: a random key per entry made
    /// every append write a page anywhere in that index; the chain (each entry's unique `seq`
    /// in what it hashes, checked by `audit verify`) is what ties a hash to its entry.
    private static let v8: [String] = [
        "ALTER TABLE audit DROP CONSTRAINT audit_hash_key"
    ]
}
