import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Testing

/// The two hand-kept schemas (SQLite's `Migrations`, PostgreSQL's `PostgresSchema`) describe one
/// catalog: the same tables, columns, types, nullability, primary keys, unique constraints,
/// foreign keys (with their delete rules), checks (by the columns they constrain) and indexes,
/// read from each database's own catalog after every migration. Any difference fails, naming it.
@Suite(.enabled(if: PostgresTestDatabase.enabled, Comment(rawValue: PostgresTestDatabase.skipped)))
struct SchemaParityTests {
    @Test func bothBackendsMigrateToTheSameCatalog() async throws {
        let sqlite = try await TestBackend.sqlite.withStore { store in try await SQLiteCatalog.read(store) }
        let postgres = try await TestBackend.postgres.withStore { store in try await PostgresCatalog.read(store) }
        #expect(sqlite.keys.sorted() == postgres.keys.sorted(), "tables")
        for name in sqlite.keys.sorted() {
            guard let left = sqlite[name], let right = postgres[name] else { continue }
            #expect(left.columns == right.columns, "\(name): columns")
            #expect(left.primaryKey == right.primaryKey, "\(name): primary key")
            #expect(left.uniques == right.uniques, "\(name): unique constraints")
            #expect(left.foreignKeys == right.foreignKeys, "\(name): foreign keys")
            #expect(left.checks == right.checks, "\(name): checks")
            #expect(left.indexes == right.indexes, "\(name): indexes")
        }
        // The comparison is not vacuous: every table has columns and a primary key.
        #expect(sqlite.count >= 15 && sqlite.values.allSatisfy { !$0.columns.isEmpty && !$0.primaryKey.isEmpty })
    }
}

/// One table as both catalogs can describe it.
struct CatalogTable: Equatable {
    /// `name type [NOT NULL]`, by name; types by storage class (TEXT, INTEGER, BOOLEAN, BLOB, REAL).
    var columns: [String] = []
    var primaryKey: [String] = []
    var uniques: Set<String> = []
    /// `columns -> table(columns) on delete ACTION`.
    var foreignKeys: Set<String> = []
    /// Each check as the sorted columns it reads, the list sorted.
    var checks: [String] = []
    /// `name(columns)[ unique]` of the indexes made by `CREATE INDEX`.
    var indexes: Set<String> = []
}

/// Tables that are each backend's migration bookkeeping, not the store's schema.
let bookkeeping: Set<String> = ["grdb_migrations", "schema_migrations"]

enum SQLiteCatalog {
    static func read(_ store: any ConsoleStore) async throws -> [String: CatalogTable] {
        func rows(_ sql: String) async throws -> [SQLRow] {
            try await storeSQL(store, SQLStatement(stringLiteral: sql))
        }
        var catalog: [String: CatalogTable] = [:]
        for table in try await rows("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name") {
            let name: String = try table.get("name")
            guard !name.hasPrefix("sqlite_"), !bookkeeping.contains(name) else { continue }
            var result = CatalogTable()
            let info = try await rows("PRAGMA table_info(\(name))")
            let columnNames = try info.map { try $0.get("name", as: String.self) }
            var checks = CheckParser.checks(in: try table.get("sql"), columns: Set(columnNames))
            var keyed: [(Int, String)] = []
            for column in info {
                let columnName: String = try column.get("name")
                var type: String = try column.get("type")
                // A 0/1 flag with its check is PostgreSQL's BOOLEAN.
                if type == "INTEGER", let flag = checks.firstIndex(of: "\(columnName) in01") {
                    type = "BOOLEAN"
                    checks.remove(at: flag)
                }
                let notNull = try column.get("notnull", as: Int.self) != 0 || column.get("pk", as: Int.self) > 0
                result.columns.append("\(columnName) \(type)\(notNull ? " NOT NULL" : "")")
                let pk: Int = try column.get("pk")
                if pk > 0 { keyed.append((pk, columnName)) }
            }
            result.columns.sort()
            result.primaryKey = keyed.sorted { $0.0 < $1.0 }.map(\.1)
            result.checks = checks.sorted()
            for key in try await rows("PRAGMA foreign_key_list(\(name))").grouped(by: "id") {
                let from = try key.map { try $0.get("from", as: String.self) }.joined(separator: ",")
                let to = try key.map { try $0.get("to", as: String.self) }.joined(separator: ",")
                let parent: String = try key[0].get("table")
                let action: String = try key[0].get("on_delete")
                result.foreignKeys.insert("\(from) -> \(parent)(\(to)) on delete \(action)")
            }
            for index in try await rows("PRAGMA index_list(\(name))") {
                let indexName: String = try index.get("name")
                let origin: String = try index.get("origin")
                // With the primary key's remaining columns a WITHOUT ROWID table's index carries
                // (PostgreSQL's indexes name them).
                var names: [String] = []
                for column in try await rows("PRAGMA index_xinfo(\(indexName))") {
                    if let name: String = try column.get("name"), !names.contains(name) { names.append(name) }
                }
                let columns = names.joined(separator: ",")
                if origin == "u" { result.uniques.insert(columns) }
                if origin == "c" {
                    let unique: Int = try index.get("unique")
                    result.indexes.insert("\(indexName)(\(columns))\(unique != 0 ? " unique" : "")")
                }
            }
            catalog[name] = result
        }
        return catalog
    }
}

enum PostgresCatalog {
    static func read(_ store: any ConsoleStore) async throws -> [String: CatalogTable] {
        var catalog: [String: CatalogTable] = [:]
        let tables = try await storeSQL(
            store,
            "SELECT table_name::TEXT AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
        )
        for table in tables {
            let name: String = try table.get("name")
            if !bookkeeping.contains(name) { catalog[name] = CatalogTable() }
        }
        let columns = try await storeSQL(
            store,
            """
            SELECT table_name::TEXT AS tbl, column_name::TEXT AS name, data_type::TEXT AS type,
                is_nullable::TEXT AS nullable
            FROM information_schema.columns WHERE table_schema = 'public'
            """)
        for column in columns {
            let table: String = try column.get("tbl")
            guard catalog[table] != nil else { continue }
            let type = storageClass(try column.get("type"))
            let notNull = try column.get("nullable", as: String.self) == "NO"
            catalog[table]?.columns.append(
                "\(try column.get("name", as: String.self)) \(type)\(notNull ? " NOT NULL" : "")")
        }
        let constraints = try await storeSQL(
            store,
            """
            SELECT c.conrelid::regclass::TEXT AS tbl, c.contype::TEXT AS kind,
                COALESCE(c.confrelid::regclass::TEXT, '') AS parent, c.confdeltype::TEXT AS action,
                (SELECT string_agg(a.attname::TEXT, ',' ORDER BY k.n) FROM unnest(c.conkey) WITH ORDINALITY k(num, n)
                    JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.num) AS cols,
                (SELECT string_agg(a.attname::TEXT, ',' ORDER BY a.attname) FROM unnest(c.conkey) k(num)
                    JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.num) AS sorted_cols,
                COALESCE((SELECT string_agg(a.attname::TEXT, ',' ORDER BY k.n)
                    FROM unnest(c.confkey) WITH ORDINALITY k(num, n)
                    JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.num), '') AS parent_cols
            FROM pg_constraint c WHERE c.connamespace = 'public'::regnamespace AND c.conrelid <> 0
            """)
        let actions = ["a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"]
        for constraint in constraints {
            let table: String = try constraint.get("tbl")
            guard catalog[table] != nil else { continue }
            let columns: String = try constraint.get("cols")
            switch try constraint.get("kind", as: String.self) {
            case "p": catalog[table]?.primaryKey = columns.split(separator: ",").map(String.init)
            case "u": catalog[table]?.uniques.insert(columns)
            case "f":
                let action = actions[try constraint.get("action", as: String.self)] ?? "?"
                catalog[table]?.foreignKeys.insert(
                    "\(columns) -> \(try constraint.get("parent", as: String.self))(\(try constraint.get("parent_cols", as: String.self))) on delete \(action)"
                )
            case "c": catalog[table]?.checks.append(try constraint.get("sorted_cols"))
            default: continue
            }
        }
        let indexes = try await storeSQL(
            store,
            """
            SELECT t.relname::TEXT AS tbl, i.relname::TEXT AS name, ix.indisunique AS is_unique,
                string_agg(a.attname::TEXT, ',' ORDER BY k.n) AS cols
            FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid JOIN pg_class t ON t.oid = ix.indrelid
                JOIN pg_namespace ns ON ns.oid = t.relnamespace,
                unnest(ix.indkey) WITH ORDINALITY k(num, n) JOIN pg_attribute a ON a.attnum = k.num
            WHERE ns.nspname = 'public' AND a.attrelid = t.oid
                AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = ix.indexrelid)
            GROUP BY t.relname, i.relname, ix.indisunique
            """)
        for index in indexes {
            let table: String = try index.get("tbl")
            guard catalog[table] != nil else { continue }
            let unique: Bool = try index.get("is_unique")
            catalog[table]?.indexes.insert(
                "\(try index.get("name", as: String.self))(\(try index.get("cols", as: String.self)))\(unique ? " unique" : "")"
            )
        }
        for name in catalog.keys {
            catalog[name]?.columns.sort()
            catalog[name]?.checks.sort()
        }
        return catalog
    }

    static func storageClass(_ type: String) -> String {
        switch type {
        case "text", "character varying": "TEXT"
        case "integer", "bigint", "smallint": "INTEGER"
        case "boolean": "BOOLEAN"
        case "bytea": "BLOB"
        case "double precision", "real": "REAL"
        default: type.uppercased()
        }
    }
}

/// The `CHECK (…)` clauses of a SQLite `CREATE TABLE`, each as the sorted columns it reads
/// (a 0/1 flag's `col IN (0, 1)` as `col in01`).
enum CheckParser {
    static func checks(in sql: String, columns: Set<String>) -> [String] {
        var result: [String] = []
        let text = Array(sql)
        var i = 0
        while i < text.count {
            guard matches(text, i, "CHECK") else {
                i += 1
                continue
            }
            var j = i + 5
            while j < text.count, text[j] == " " { j += 1 }
            guard j < text.count, text[j] == "(" else {
                i = j
                continue
            }
            var depth = 0
            var k = j
            var inString = false
            repeat {
                if text[k] == "'" { inString.toggle() }
                if !inString, text[k] == "(" { depth += 1 }
                if !inString, text[k] == ")" { depth -= 1 }
                k += 1
            } while k < text.count && depth > 0
            let body = String(text[(j + 1)..<(k - 1)])
            result.append(describe(body, columns: columns))
            i = k
        }
        return result
    }

    private static func matches(_ text: [Character], _ at: Int, _ word: String) -> Bool {
        let chars = Array(word)
        guard at + chars.count <= text.count else { return false }
        if at > 0, text[at - 1].isLetter || text[at - 1] == "_" { return false }
        for (offset, char) in chars.enumerated() where text[at + offset].uppercased() != String(char) { return false }
        return true
    }

    private static func describe(_ body: String, columns: Set<String>) -> String {
        let flat = body.replacingOccurrences(of: " ", with: "")
        if let column = columns.first(where: { flat == "\($0)IN(0,1)" }) { return "\(column) in01" }
        var names: Set<String> = []
        var word = ""
        var inString = false
        for char in body + " " {
            if char == "'" { inString.toggle() }
            if !inString, char.isLetter || char.isNumber || char == "_" {
                word.append(char)
            } else {
                if columns.contains(word) { names.insert(word) }
                word = ""
            }
        }
        return names.sorted().joined(separator: ",")
    }
}

extension Array where Element == SQLRow {
    /// Rows grouped by the integer column `key`, in first-seen order.
    func grouped(by key: String) throws -> [[SQLRow]] {
        var order: [Int] = []
        var groups: [Int: [SQLRow]] = [:]
        for row in self {
            let id: Int = try row.get(key)
            if groups[id] == nil { order.append(id) }
            groups[id, default: []].append(row)
        }
        return order.compactMap { groups[$0] }
    }
}
