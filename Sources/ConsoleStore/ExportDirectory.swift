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
    /// has the id format; a line over ``maxIndexLineBytes`` is refused unread. The file is read
    /// in chunks, and one over ``maxIndexBytes`` (a sparse file claiming 100 GB, say) is refused
    /// before a byte of it is read: the server holds one index in memory, not the disk's worth.
    func readIndex(problems: inout [ImportProblem]) -> Index? {
        let url = root.appendingPathComponent(Self.indexFile)
        let file: OpenFile
        switch Self.openRegularFile(url, maxBytes: Self.maxIndexBytes, tooLarge: "index_too_large") {
        case .missing: return nil
        case .failed(let code, let reason):
            problems.append(.init(path: Self.indexFile, code: code, reason: "The index file \(reason)"))
            return Index()
        case .ok(let opened): file = opened
        }
        defer { close(file.fd) }
        let problemsBefore = problems.count
        var index = Index()
        var lineNumber = 0
        var pending: [UInt8] = []
        /// Bytes of the current line past the limit are skipped, counted but not kept.
        var overlong = 0
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var remaining = file.size
        /// Refused rows past ``maxIndexProblems``: counted, not listed (a file of bad lines
        /// would otherwise hold millions of them).
        var unlisted = 0
        func finish(_ line: ArraySlice<UInt8>) {
            lineNumber += 1
            let length = line.count + overlong
            overlong = 0
            var found: [ImportProblem] = []
            parseIndexLine(line, length: length, number: lineNumber, into: &index, problems: &found)
            if problems.count - problemsBefore < Self.maxIndexProblems {
                problems.append(contentsOf: found)
            } else {
                unlisted += found.count
            }
        }
        while remaining > 0 {
            let n = chunk.withUnsafeMutableBytes { read(file.fd, $0.baseAddress, min($0.count, remaining)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                problems.append(
                    .init(
                        path: Self.indexFile, code: "unreadable_file",
                        reason: "The index file cannot be read to its end."))
                break
            }
            remaining -= n
            var start = 0
            while let newline = chunk[start..<n].firstIndex(of: UInt8(ascii: "\n")) {
                if pending.isEmpty {
                    finish(chunk[start..<newline])
                } else {
                    pending.append(contentsOf: chunk[start..<newline])
                    finish(pending[...])
                    pending.removeAll(keepingCapacity: true)
                }
                start = newline + 1
            }
            let rest = n - start
            if pending.count + rest > Self.maxIndexLineBytes {
                overlong += pending.count + rest
                pending.removeAll(keepingCapacity: true)
            } else {
                pending.append(contentsOf: chunk[start..<n])
            }
        }
        if !pending.isEmpty || overlong > 0 { finish(pending[...]) }
        if unlisted > 0 {
            problems.append(
                .init(
                    path: Self.indexFile, code: "invalid_lookup_row",
                    reason: "\(unlisted) more rows were refused; only the first \(Self.maxIndexProblems) are listed."))
        }
        return index
    }

    /// One line of the index (its `length` counts bytes skipped for being over the limit).
    private func parseIndexLine(
        _ line: ArraySlice<UInt8>, length: Int, number: Int, into index: inout Index, problems: inout [ImportProblem]
    ) {
        struct Line: Decodable {
            var PK: String
            var BackupId: String
        }
        let trimmed = line.last == UInt8(ascii: "\r") ? line.dropLast() : line
        if length == line.count, trimmed.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }
        let path = "\(Self.indexFile):\(number)"
        guard length <= Self.maxIndexLineBytes else {
            problems.append(
                .init(
                    path: path, code: "invalid_lookup_row",
                    reason: "The line has \(length) bytes; a row has at most \(Self.maxIndexLineBytes)."))
            return
        }
        guard let row = try? JSONDecoder().decode(Line.self, from: Data(trimmed)) else {
            problems.append(
                .init(path: path, code: "invalid_lookup_row", reason: "Expected {\"PK\": \"…\", \"BackupId\": \"…\"}."))
            return
        }
        do {
            _ = try FactorLookupKey(parsing: row.PK)
            _ = try BackupAccountID(row.BackupId)
        } catch {
            problems.append(.init(path: path, code: error.code, reason: error.message))
            return
        }
        if let first = index.owner[row.PK] {
            problems.append(
                .init(
                    path: path, code: "duplicate_lookup_row",
                    reason: "\(row.PK) appears again (first for backup \(first)); the first row is kept."))
            return
        }
        index.owner[row.PK] = row.BackupId
        index.rowsByBackup[row.BackupId, default: []].append(row.PK)
        index.rows.append(LookupRow(pk: row.PK, backupId: row.BackupId))
    }

    /// Reads and checks one backup directory; `nil` after appending the problem.
    ///
    /// Refused, each with its reason: a name that is not a backup id or not a secp256k1 point
    /// (such a backup could never be reset), metadata that is not a regular file, does not parse,
    /// breaks the service's limits or names another id, and a `backup` entry that is there but
    /// is not a regular file (a symlink, FIFO or directory), is empty or is over 15 MiB.
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
        case .ok(let blob) where blob.isEmpty:
            // The service refuses an empty backup (`empty_backup_file`), so it never stores one:
            // an empty file is a copy cut short, and must not replace the blob the console holds.
            return problem(
                "backup", "empty_blob",
                "The sealed blob is empty; the Backup Service never stores an empty one, so the export's copy of it is cut short."
            )
        case .ok(let blob): return Entry(metadata: metadata, blob: blob, blobSHA256: Hex.encode(SHA256.hash(blob)))
        }
    }

    /// A line of `factor_lookup.jsonl` longer than this is not a row (keys are ≤ 4 KiB).
    static let maxIndexLineBytes = 16 * 1024
    /// The largest `factor_lookup.jsonl` read: about two million rows of the service's size,
    /// far beyond one tenant's export of today, and memory a server can spare.
    static let maxIndexBytes = 256 * 1024 * 1024
    /// Refused index rows listed one by one; the rest are counted in one last problem.
    static let maxIndexProblems = 1000

    enum FileRead {
        case missing
        case failed(code: String, reason: String)
        case ok(Data)
    }

    struct OpenFile {
        var fd: Int32
        var size: Int
    }

    enum FileOpen {
        case missing
        case failed(code: String, reason: String)
        case ok(OpenFile)
    }

    /// Opens `url` only if it is a regular file of at most `maxBytes`: the entry itself is
    /// examined (`O_NOFOLLOW`), so a symlink, FIFO, socket or directory is a failure and never
    /// followed or blocked on; the size is that of the file actually opened. The caller closes.
    static func openRegularFile(_ url: URL, maxBytes: Int, tooLarge: String = "file_too_large") -> FileOpen {
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
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            return .failed(code: "not_a_regular_file", reason: "is not a regular file.")
        }
        guard info.st_size >= 0, info.st_size <= Int64(maxBytes) else {
            close(fd)
            return .failed(code: tooLarge, reason: "has \(info.st_size) bytes; at most \(maxBytes) are allowed.")
        }
        return .ok(OpenFile(fd: fd, size: Int(info.st_size)))
    }

    /// Reads `url` whole under the rules of ``openRegularFile(_:maxBytes:tooLarge:)``.
    static func readRegularFile(_ url: URL, maxBytes: Int, tooLarge: String = "file_too_large") -> FileRead {
        let file: OpenFile
        switch openRegularFile(url, maxBytes: maxBytes, tooLarge: tooLarge) {
        case .missing: return .missing
        case .failed(let code, let reason): return .failed(code: code, reason: reason)
        case .ok(let opened): file = opened
        }
        defer { close(file.fd) }
        let size = file.size
        var data = Data(count: size)
        var offset = 0
        let complete = data.withUnsafeMutableBytes { raw -> Bool in
            guard let base = raw.baseAddress else { return size == 0 }
            while offset < size {
                let n = read(file.fd, base + offset, size - offset)
                if n < 0, errno == EINTR { continue }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
        guard complete else { return .failed(code: "unreadable_file", reason: "cannot be read to its end.") }
        return .ok(data)
    }

    private static func describe(mode: mode_t) -> String { InputFile.describe(mode) }
}
