import BackupModel
import Foundation

/// `DIR/export.json`: when the export's copy of the Backup Service started, and whether it holds
/// every backup. `{"snapshotAt": "<RFC 3339>", "complete": true|false}`, nothing else.
public struct SnapshotManifest: Sendable, Equatable {
    /// Unix seconds.
    public var snapshotAt: Int64
    public var complete: Bool

    public init(snapshotAt: Int64, complete: Bool) {
        self.snapshotAt = snapshotAt
        self.complete = complete
    }

    public static let fileName = "export.json"

    /// Reads `DIR/export.json`; `nil` when there is none.
    /// - Throws: `invalid_export_manifest` naming what is wrong (not JSON, unknown or missing
    ///   fields, a time that is not RFC 3339 or lies in the future beyond clock skew).
    public static func read(directory: URL, now: Int64) throws(ConsoleError) -> SnapshotManifest? {
        let url = directory.appendingPathComponent(fileName)
        // Examined, never followed or blocked on (a FIFO named export.json would hang the import).
        let data: Data
        switch ExportDirectory.readRegularFile(url, maxBytes: 4096) {
        case .missing: return nil
        case .failed: throw invalid("it is not a readable regular file of at most 4 KiB")
        case .ok(let read): data = read
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw invalid("it is not a JSON object")
        }
        // A name given twice: JSONSerialization keeps one of them, jq and others the last; the
        // file must mean the same to every reader.
        if let repeated = repeatedName(in: data) {
            throw invalid("it gives \(SecretShape.quoted(repeated, limit: 32)) twice")
        }
        let unknown = Set(object.keys).subtracting(["snapshotAt", "complete"])
        guard unknown.isEmpty else {
            throw invalid("unknown field \(unknown.sorted().first.map { SecretShape.quoted($0, limit: 32) } ?? "")")
        }
        struct Raw: Decodable {
            var snapshotAt: String
            var complete: Bool
        }
        guard let raw = try? JSONDecoder().decode(Raw.self, from: data) else {
            throw invalid("it needs \"snapshotAt\" (an RFC 3339 string) and \"complete\" (true or false)")
        }
        return SnapshotManifest(
            snapshotAt: try parseTime(raw.snapshotAt, now: now, what: "\"snapshotAt\""), complete: raw.complete)
    }

    /// An RFC 3339 time no later than `now` plus five minutes of clock skew.
    /// - Throws: `invalid_snapshot_time`.
    public static func parseTime(_ text: String, now: Int64, what: String) throws(ConsoleError) -> Int64 {
        guard text.utf8.count <= 64, let time = Timestamp(rfc3339: text) else {
            throw .invalid(
                "invalid_snapshot_time", "\(what) must be an RFC 3339 time like 2026-11-22T06:00:00Z.")
        }
        guard time.seconds <= now + 300 else {
            throw .invalid("invalid_snapshot_time", "\(what) \(Timestamp.format(time.seconds)) lies in the future.")
        }
        return time.seconds
    }

    /// The backup directories an export holds: what a complete snapshot says exists.
    public static func backupIds(in directory: URL) throws(ConsoleError) -> Set<String> {
        Set(try ExportDirectory(root: directory).backupDirectories())
    }

    /// The first name that the top-level object of `data` (valid JSON) gives twice, decoded.
    static func repeatedName(in data: Data) -> String? {
        let bytes = [UInt8](data)
        var depth = 0
        var seen = Set<String>()
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
            case UInt8(ascii: "\""):
                // A string: find its end (a quote not escaped), then whether a colon follows.
                var end = index + 1
                while end < bytes.count, bytes[end] != UInt8(ascii: "\"") {
                    end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1
                }
                var next = end + 1
                while next < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[next]) { next += 1 }
                if depth == 1, next < bytes.count, bytes[next] == UInt8(ascii: ":"),
                    let name = try? JSONSerialization.jsonObject(
                        with: Data(bytes[index...min(end, bytes.count - 1)]), options: .fragmentsAllowed) as? String,
                    !seen.insert(name).inserted
                {
                    return name
                }
                index = end
            default: break
            }
            index += 1
        }
        return nil
    }

    static func invalid(_ why: String) -> ConsoleError {
        .invalid("invalid_export_manifest", "The export's \(fileName) is not usable: \(why).")
    }
}
