import BackupModel
import BackupService
import Foundation

/// The Backup Service's storage as files, in the layout `import DIR` reads: what
/// `aws s3 sync s3://BUCKET DIR` and a scan of the FactorLookup table into
/// `DIR/factor_lookup.jsonl` produce. Metadata is written in the stored form (`sub`s kept,
/// `webauthnCredential`, RFC 3339 times); index rows as `{"BackupId","CreatedAt","PK"}`.
struct ExportLayout: Sendable {
    static let indexFile = "factor_lookup.jsonl"
    let root: URL

    /// - Throws: ``ConsoleError`` `invalid_export` when `directory` is not a directory.
    init(directory: String) throws(ConsoleError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw .invalid("invalid_export", "The export directory \(directory) does not exist.")
        }
        root = URL(fileURLWithPath: directory, isDirectory: true)
    }

    struct Loaded {
        var backups: [String: (metadata: BackupMetadata?, blob: [UInt8]?)] = [:]
        var rows: [String: ServiceStorage.LookupItem] = [:]
    }

    /// What the directory holds; entries that are not a backup id or do not parse are left out
    /// (and left alone on disk).
    func load() -> Loaded {
        var loaded = Loaded()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        for name in names where BackupServiceWire.isBackupAccountIdShape(name) {
            let folder = root.appendingPathComponent(name, isDirectory: true)
            let metadata = FileManager.default.contents(atPath: folder.appendingPathComponent("metadata").path)
                .flatMap { try? BackupMetadata.decode($0) }
            let blob = FileManager.default.contents(atPath: folder.appendingPathComponent("backup").path).map(
                Array.init)
            if metadata != nil || blob != nil { loaded.backups[name] = (metadata, blob) }
        }
        struct Row: Decodable {
            var PK: String
            var BackupId: String
            var CreatedAt: Int64?
        }
        if let data = FileManager.default.contents(atPath: root.appendingPathComponent(Self.indexFile).path) {
            for line in data.split(separator: UInt8(ascii: "\n")) {
                guard let row = try? JSONDecoder().decode(Row.self, from: Data(line)) else { continue }
                loaded.rows[row.PK] = .init(backupId: row.BackupId, createdAt: row.CreatedAt ?? 0)
            }
        }
        return loaded
    }

    /// Only well-formed ids name files: nothing else may reach the file system.
    func folder(_ id: String) throws(ConsoleError) -> URL {
        guard BackupServiceWire.isBackupAccountIdShape(id) else {
            throw .invalid("invalid_backup_account_id", "Not a backup id: \(id.prefix(80)).")
        }
        return root.appendingPathComponent(id, isDirectory: true)
    }

    func writeMetadata(_ metadata: BackupMetadata) throws(ConsoleError) {
        try write(metadata.encoded(.stored), to: try folder(metadata.id).appendingPathComponent("metadata"))
    }

    func writeBlob(_ id: String, _ bytes: [UInt8]) throws(ConsoleError) {
        try write(Data(bytes), to: try folder(id).appendingPathComponent("backup"))
    }

    /// Deletes `{id}/{name}`, and the folder once it is empty.
    func delete(_ id: String, _ name: String) throws(ConsoleError) {
        let folder = try folder(id)
        try? FileManager.default.removeItem(at: folder.appendingPathComponent(name))
        if ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? ["?"]).isEmpty {
            try? FileManager.default.removeItem(at: folder)
        }
    }

    func writeIndex(_ rows: [(pk: String, item: ServiceStorage.LookupItem)]) throws(ConsoleError) {
        var text = ""
        text.reserveCapacity(rows.count * 160)
        for row in rows { text += Self.line(pk: row.pk, item: row.item) + "\n" }
        try write(Data(text.utf8), to: root.appendingPathComponent(Self.indexFile))
    }

    static func line(pk: String, item: ServiceStorage.LookupItem) -> String {
        var out: [UInt8] = Array(#"{"BackupId":"#.utf8)
        CanonicalJSON.append(string: item.backupId, to: &out)
        out += Array(#","CreatedAt":\#(item.createdAt),"PK":"#.utf8)
        CanonicalJSON.append(string: pk, to: &out)
        out += Array("}".utf8)
        return String(decoding: out, as: UTF8.self)
    }

    /// Writes atomically (a temporary file renamed over the target), creating the folder.
    func write(_ data: Data, to url: URL) throws(ConsoleError) {
        do {
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url, options: .atomic)
        } catch {
            throw .internalError("Writing \(url.path) failed: \(error.localizedDescription)")
        }
    }
}

extension ServiceStorage {
    /// Writes everything this storage holds into `directory` (created if needed) in the export
    /// layout: the service's state as an export taken now.
    public func export(to directory: String) throws(ConsoleError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw .internalError("Cannot create \(directory): \(error.localizedDescription)")
        }
        let layout = try ExportLayout(directory: directory)
        for id in backupIds() {
            if let metadata = getMetadata(id)?.metadata { try layout.writeMetadata(metadata) }
            if let blob = getBlob(id) { try layout.writeBlob(id, blob) }
        }
        try layout.writeIndex(lookupRows())
    }
}
