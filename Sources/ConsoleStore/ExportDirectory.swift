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
        // A symlink named like a backup is listed so that it is refused with a reason, not followed.
        return names.filter { name in
            guard !name.hasPrefix(".") else { return false }
            var info = stat()
            guard lstat(root.appendingPathComponent(name).path, &info) == 0 else { return false }
            let type = info.st_mode & S_IFMT
            return type == S_IFDIR || (type == S_IFLNK && name.hasPrefix(BackupAccountID.prefix))
        }.sorted()
    }

    /// Parses `factor_lookup.jsonl` if present (`nil` if not); bad lines become problems.
    ///
    /// A row is kept only if its key parses (no control characters, bounded) and its backup id
    /// has the id format; a line over ``maxIndexLineBytes`` is refused unread.
    func readIndex(problems: inout [ImportProblem]) -> Index? {
        let url = root.appendingPathComponent(Self.indexFile)
        let data: Data
        switch Self.readRegularFile(url, maxBytes: Int.max) {
        case .missing: return nil
        case .failed(let code, let reason):
            problems.append(.init(path: Self.indexFile, code: code, reason: "The index file \(reason)"))
            return Index()
        case .ok(let bytes): data = bytes
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
            guard trimmed.count <= Self.maxIndexLineBytes else {
                problems.append(
                    .init(
                        path: path, code: "invalid_lookup_row",
                        reason: "The line has \(trimmed.count) bytes; a row has at most \(Self.maxIndexLineBytes)."))
                continue
            }
            guard let row = try? decoder.decode(Line.self, from: Data(trimmed)) else {
                problems.append(
                    .init(
                        path: path, code: "invalid_lookup_row", reason: "Expected {\"PK\": \"…\", \"BackupId\": \"…\"}."
                    ))
                continue
            }
            do {
                _ = try FactorLookupKey(parsing: row.PK)
                _ = try BackupAccountID(row.BackupId)
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
    ///
    /// Refused, each with its reason: a name that is not a backup id or not a secp256k1 point
    /// (such a backup could never be reset), metadata that is not a regular file, does not parse,
    /// breaks the service's limits or names another id, and a `backup` entry that is there but
    /// is not a regular file (a symlink, FIFO or directory) or is over 15 MiB.
    func readBackup(_ name: String, problems: inout [ImportProblem]) -> Entry? {
        let dir = root.appendingPathComponent(name)
        func problem(_ file: String?, _ code: String, _ reason: String) -> Entry? {
            problems.append(.init(path: file.map { "\(name)/\($0)" } ?? name, code: code, reason: reason))
            return nil
        }
        let id: BackupAccountID
        do {
            id = try BackupAccountID(name)
        } catch {
            return problem(nil, error.code, "The directory name is not a backup id: \(error.message)")
        }
        guard Secp256k1.isValidPublicKey(id.publicKey) else {
            return problem(
                nil, "invalid_backup_account_id",
                "The backup id's key is not a point on secp256k1; such a backup could never be reset.")
        }
        var dirInfo = stat()
        guard lstat(dir.path, &dirInfo) == 0, dirInfo.st_mode & S_IFMT == S_IFDIR else {
            return problem(nil, "not_a_directory", "The backup entry is a symbolic link, not a directory.")
        }
        let metadataData: Data
        switch Self.readRegularFile(
            dir.appendingPathComponent("metadata"), maxBytes: Self.maxMetadataBytes, tooLarge: "metadata_too_large")
        {
        case .missing: return problem("metadata", "missing_metadata", "The backup directory has no metadata file.")
        case .failed(let code, let reason): return problem("metadata", code, "The metadata file \(reason)")
        case .ok(let data): metadataData = data
        }
        let metadata: BackupMetadata
        do {
            metadata = try BackupMetadata.decode(metadataData)
            try metadata.validate()
        } catch {
            return problem("metadata", error.code, error.message)
        }
        guard metadata.id == name else {
            return problem(
                "metadata", "id_mismatch",
                "The metadata id \(UntrustedText.escaped(String(metadata.id.prefix(80)))) differs from the directory name."
            )
        }
        switch Self.readRegularFile(
            dir.appendingPathComponent("backup"), maxBytes: BackupMetadata.maxBlobBytes, tooLarge: "blob_too_large")
        {
        case .missing: return Entry(metadata: metadata, blob: nil, blobSHA256: nil)
        case .failed(let code, let reason): return problem("backup", code, "The sealed blob \(reason)")
        case .ok(let blob): return Entry(metadata: metadata, blob: blob, blobSHA256: Hex.encode(SHA256.hash(blob)))
        }
    }

    /// A line of `factor_lookup.jsonl` longer than this is not a row (keys are ≤ 4 KiB).
    static let maxIndexLineBytes = 16 * 1024

    enum FileRead {
        case missing
        case failed(code: String, reason: String)
        case ok(Data)
    }

    /// Reads `url` only if it is a regular file of at most `maxBytes`: the entry itself is
    /// examined (`O_NOFOLLOW`), so a symlink, FIFO, socket or directory is a failure and never
    /// followed or blocked on; the size is that of the file actually opened.
    static func readRegularFile(_ url: URL, maxBytes: Int, tooLarge: String = "file_too_large") -> FileRead {
        var info = stat()
        guard lstat(url.path, &info) == 0 else {
            return errno == ENOENT ? .missing : .failed(code: "unreadable_file", reason: "cannot be examined.")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            return .failed(
                code: "not_a_regular_file", reason: "is a \(describe(mode: info.st_mode)), not a regular file.")
        }
        let fd = open(url.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return .failed(code: "unreadable_file", reason: "cannot be read.") }
        defer { close(fd) }
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            return .failed(code: "not_a_regular_file", reason: "is not a regular file.")
        }
        let size = Int(info.st_size)
        guard size <= maxBytes else {
            return .failed(code: tooLarge, reason: "has \(size) bytes; at most \(maxBytes) are allowed.")
        }
        var data = Data(count: size)
        var offset = 0
        let complete = data.withUnsafeMutableBytes { raw -> Bool in
            guard let base = raw.baseAddress else { return size == 0 }
            while offset < size {
                let n = read(fd, base + offset, size - offset)
                if n < 0, errno == EINTR { continue }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
        guard complete else { return .failed(code: "unreadable_file", reason: "cannot be read to its end.") }
        return .ok(data)
    }

    private static func describe(mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFLNK: "symbolic link"
        case S_IFDIR: "directory"
        case S_IFIFO: "FIFO"
        case S_IFSOCK: "socket"
        case S_IFCHR, S_IFBLK: "device"
        default: "special file"
        }
    }
}
