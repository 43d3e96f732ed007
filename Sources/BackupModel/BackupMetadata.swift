import Foundation

/// A backup's metadata: who may open it (factors), which devices sync it (sync factors), the
/// encrypted backup keys, and the manifest hash. The console reads it; it never decrypts.
public struct BackupMetadata: Sendable, Equatable, Codable {
    public static let maxMainFactors = 10
    public static let maxSyncFactors = 25
    public static let maxBlobBytes = 15 * 1024 * 1024

    public var id: String
    public var manifestHash: String
    public var factors: [Factor]
    public var syncFactors: [Factor]
    public var keys: [EncryptionKey]

    public init(
        id: String, manifestHash: String, factors: [Factor], syncFactors: [Factor], keys: [EncryptionKey]
    ) {
        self.id = id
        self.manifestHash = manifestHash
        self.factors = factors
        self.syncFactors = syncFactors
        self.keys = keys
    }

    /// Parses either wire form.
    /// - Throws: ``ConsoleError`` `invalid_metadata` with the JSON path of the first problem.
    public static func decode(_ data: Data) throws(ConsoleError) -> BackupMetadata {
        do {
            return try JSONDecoder().decode(BackupMetadata.self, from: data)
        } catch let error as DecodingError {
            throw .invalid("invalid_metadata", "Invalid metadata JSON: \(Self.describe(error)).")
        } catch {
            throw .invalid("invalid_metadata", "Invalid metadata JSON: \(error).")
        }
    }

    /// Writes one form as compact JSON with sorted keys (stable bytes for hashing and goldens).
    public func encoded(_ form: MetadataForm = .stored) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.userInfo[MetadataForm.userInfoKey] = form
        // Every member encodes infallibly (strings, integers, finite JSON values).
        return (try? encoder.encode(self)) ?? Data()
    }

    /// Every FactorLookup key the metadata implies, main then sync.
    public var lookupKeys: [FactorLookupKey] {
        factors.compactMap { $0.lookupKey(scope: .main) } + syncFactors.compactMap { $0.lookupKey(scope: .sync) }
    }

    /// The Turnkey sub-organization ids the TURNKEY keys point at, deduplicated, in order.
    public var turnkeySubOrgIds: [String] {
        var seen = Set<String>()
        return keys.compactMap {
            if case .turnkey(let t) = $0, seen.insert(t.turnkeyAccountId).inserted { return t.turnkeyAccountId }
            return nil
        }
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let p = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return p.isEmpty ? "at the top level" : "at \(p.hasPrefix(".") ? String(p.dropFirst()) : p)"
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "missing \"\(key.stringValue)\" \(path(context))"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "wrong type \(path(context))"
        case .dataCorrupted(let context):
            return "\(UntrustedText.escaped(String(context.debugDescription.prefix(200)))) \(path(context))"
        @unknown default:
            return "\(error)"
        }
    }
}
