import BackupCrypto
import BackupModel
import Foundation

/// Reads a backup-service export laid out as S3 keeps it: `<backup_id>/metadata`, optional
/// `<backup_id>/backup`, optional `factor_lookup.jsonl`. Every bad file becomes an
/// ``ImportProblem``; nothing here writes.
struct ExportDirectory {
    static let indexFile = "factor_lookup.jsonl"
    /// Far above any real metadata (10 + 25 factors); a guard against reading a stray huge file.
    static let maxMetadataBytes = 4 * 1024 * 1024

    let root: URL

    /// A backup as the export holds it, checked but not yet compared with the store.
    struct Entry {
        var metadata: BackupMetadata
        var blob: Data?
        var blobSHA256: String?
    }

    /// The FactorLookup index of the export: pk → backup id, and each backup's pks in file order.
    struct Index {
        var owner: [String: String] = [:]
        var rowsByBackup: [String: [String]] = [:]
        /// Every row in file order (first occurrence of each pk).
        var rows: [LookupRow] = []
    }

    /// Backup directory names, sorted; skips dot entries and plain files.
    func backupDirectories() throws(ConsoleError) -> [String] {
        let fm = FileManager.default
        var isDir: ObjCBool = false
        guard fm.fileExists(atPath: root.path, isDirectory: &isDir), isDir.boolValue else {
            throw .invalid(
                "import_directory", "The import directory \(root.path) does not exist or is not a directory.")
        }
        let names: [String]
        do {
            names = try fm.contentsOfDirectory(atPath: root.path)
        } catch {
            throw .invalid("import_directory", "Cannot list the import directory \(root.path).")
        }
        return names.filter { name in
            var isDir: ObjCBool = false
            return !name.hasPrefix(".")
                && fm.fileExists(atPath: root.appendingPathComponent(name).path, isDirectory: &isDir)
                && isDir.boolValue
        }.sorted()
    }

    /// Parses `factor_lookup.jsonl` if present (`nil` if not); bad lines become problems.
    func readIndex(problems: inout [ImportProblem]) -> Index? {
        let url = root.appendingPathComponent(Self.indexFile)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        guard let data = try? Data(contentsOf: url) else {
            problems.append(
                .init(path: Self.indexFile, code: "unreadable_file", reason: "The index file cannot be read."))
            return Index()
        }
        struct Line: Decodable {
            var PK: String
            var BackupId: String
        }
        var index = Index()
        let decoder = JSONDecoder()
        var lineNumber = 0
        for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            let trimmed = line.last == UInt8(ascii: "\r") ? line.dropLast() : line
            if trimmed.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            let path = "\(Self.indexFile):\(lineNumber)"
            guard let row = try? decoder.decode(Line.self, from: Data(trimmed)) else {
                problems.append(
                    .init(
                        path: path, code: "invalid_lookup_row", reason: "Expected {\"PK\": \"…\", \"BackupId\": \"…\"}."
                    ))
                continue
            }
            do {
                _ = try FactorLookupKey(parsing: row.PK)
            } catch {
                problems.append(.init(path: path, code: error.code, reason: error.message))
                continue
            }
            if let first = index.owner[row.PK] {
                problems.append(
                    .init(
                        path: path, code: "duplicate_lookup_row",
                        reason: "\(row.PK) appears again (first for backup \(first)); the first row is kept."))
                continue
            }
            index.owner[row.PK] = row.BackupId
            index.rowsByBackup[row.BackupId, default: []].append(row.PK)
            index.rows.append(LookupRow(pk: row.PK, backupId: row.BackupId))
        }
        return index
    }

    /// Reads and checks one backup directory; `nil` after appending the problem.
    func readBackup(_ name: String, problems: inout [ImportProblem]) -> Entry? {
        let dir = root.appendingPathComponent(name)
        func problem(_ file: String?, _ code: String, _ reason: String) -> Entry? {
            problems.append(.init(path: file.map { "\(name)/\($0)" } ?? name, code: code, reason: reason))
            return nil
        }
        do {
            _ = try BackupAccountID(name)
        } catch {
            return problem(nil, error.code, "The directory name is not a backup id: \(error.message)")
        }
        let metadataURL = dir.appendingPathComponent("metadata")
        guard let metadataSize = Self.fileSize(metadataURL) else {
            return problem("metadata", "missing_metadata", "The backup directory has no metadata file.")
        }
        guard metadataSize <= Self.maxMetadataBytes else {
            return problem("metadata", "metadata_too_large", "The metadata file has \(metadataSize) bytes.")
        }
        guard let metadataData = try? Data(contentsOf: metadataURL) else {
            return problem("metadata", "unreadable_file", "The metadata file cannot be read.")
        }
        let metadata: BackupMetadata
        do {
            metadata = try BackupMetadata.decode(metadataData)
        } catch {
            return problem("metadata", error.code, error.message)
        }
        guard metadata.id == name else {
            return problem(
                "metadata", "id_mismatch", "The metadata id \(metadata.id.prefix(80)) differs from the directory name.")
        }
        let blobURL = dir.appendingPathComponent("backup")
        guard let blobSize = Self.fileSize(blobURL) else {
            return Entry(metadata: metadata, blob: nil, blobSHA256: nil)
        }
        guard blobSize <= BackupMetadata.maxBlobBytes else {
            return problem(
                "backup", "blob_too_large", "The sealed blob has \(blobSize) bytes; the service allows at most 15 MB.")
        }
        guard let blob = try? Data(contentsOf: blobURL) else {
            return problem("backup", "unreadable_file", "The sealed blob cannot be read.")
        }
        return Entry(metadata: metadata, blob: blob, blobSHA256: Hex.encode(SHA256.hash(blob)))
    }

    /// The size of a regular file, or `nil` if there is none.
    static func fileSize(_ url: URL) -> Int? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
            attributes[.type] as? FileAttributeType == .typeRegular
        else { return nil }
        return (attributes[.size] as? NSNumber)?.intValue
    }
}
