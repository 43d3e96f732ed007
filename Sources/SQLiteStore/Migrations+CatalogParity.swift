import GRDB

/// Migration `v11-catalog-parity`: what PostgreSQL's schema had and SQLite's lacked, found by the
/// catalog comparison test (`SchemaParityTests`): the queue's two indexes, and the checks that
/// a claim and a send claim are set and cleared whole.
///
/// SQLite cannot add a `CHECK` to a table, so the two tables are rebuilt by SQLite's own
/// procedure: the same definition with the check added, the rows copied, the old table
/// dropped and the new one renamed, its indexes made again. A half-set claim, which no code
/// writes, is cleared first so that no row fails the new check.
enum CatalogParity {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                UPDATE cleanup_items SET claimed_by = NULL, lease_expires_at = NULL
                WHERE (claimed_by IS NULL) <> (lease_expires_at IS NULL)
                """)
        try rebuild("cleanup_items", adding: "CHECK ((claimed_by IS NULL) = (lease_expires_at IS NULL))", db)
        try db.execute(
            sql: """
                UPDATE reset_challenges SET sending_by = NULL, sending_until = NULL
                WHERE (sending_by IS NULL) <> (sending_until IS NULL)
                """)
        try rebuild("reset_challenges", adding: "CHECK ((sending_by IS NULL) = (sending_until IS NULL))", db)
        try db.execute(sql: "CREATE INDEX cleanup_items_by_state ON cleanup_items (tenant, state, suborg_id)")
        try db.execute(
            sql: """
                CREATE INDEX cleanup_items_queued ON cleanup_items (tenant, suborg_id)
                WHERE queued_at IS NOT NULL AND state = 'pending'
                """)
    }

    /// Rebuilds `table` with `constraint` added as a table constraint.
    private static func rebuild(_ table: String, adding constraint: String, _ db: Database) throws {
        try rebuild(table, db) { definition in
            guard let close = definition.lastIndex(of: ")") else { return false }
            definition.insert(contentsOf: ",\n    \(constraint)\n", at: close)
            return true
        }
    }

    /// Rebuilds `table` from its definition as `edit` changes it (`false`: the definition is not
    /// the one expected), by SQLite's procedure: the new table made, the rows copied, the old
    /// table dropped and the new one renamed, its indexes made again.
    static func rebuild(_ table: String, _ db: Database, edit: (inout String) -> Bool) throws {
        guard
            let definition = try String.fetchOne(
                db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", arguments: [table]),
            // A table SQLite renamed is stored with its name quoted.
            let name = definition.range(of: "CREATE TABLE \(table) ")
                ?? definition.range(of: "CREATE TABLE \"\(table)\"")
        else { throw DatabaseError(message: "cannot read the definition of \(table)") }
        var rebuilt = definition
        rebuilt.replaceSubrange(name, with: "CREATE TABLE \(table)_rebuilt ")
        guard edit(&rebuilt) else { throw DatabaseError(message: "unexpected definition of \(table)") }
        let indexes = try String.fetchAll(
            db, sql: "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL",
            arguments: [table])
        try db.execute(sql: rebuilt)
        try db.execute(sql: "INSERT INTO \(table)_rebuilt SELECT * FROM \(table)")
        try db.execute(sql: "DROP TABLE \(table)")
        try db.execute(sql: "ALTER TABLE \(table)_rebuilt RENAME TO \(table)")
        for index in indexes { try db.execute(sql: index) }
    }
}
