/// The /reset identity: `"backup_account_"` + lowercase hex of a 33-byte SEC1 compressed
/// secp256k1 public key. It is also the backup's `backup_id`.
///
/// Parsing checks what the Backup Service checks (prefix, hex, 33 bytes); that the bytes are a
/// point on the curve is checked by BackupCrypto, which owns the curve.
public struct BackupAccountID: Hashable, Sendable, Codable, CustomStringConvertible,
    Comparable
{
    public static let prefix = "backup_account_"

    public let rawValue: String

    /// The 33 bytes of the compressed public key.
    public var publicKey: [UInt8] {
        // Validated at construction.
        Hex.decode(rawValue.dropFirst(Self.prefix.count)) ?? []
    }

    public init(compressedPublicKey: [UInt8]) {
        precondition(compressedPublicKey.count == 33, "a compressed public key has 33 bytes")
        rawValue = Self.prefix + Hex.encode(compressedPublicKey)
    }

    /// - Throws: ``ConsoleError`` `invalid_backup_account_id`, naming the rule broken.
    public init(_ text: String) throws(ConsoleError) {
        guard text.hasPrefix(Self.prefix) else {
            throw Self.invalid("it must start with \"\(Self.prefix)\"")
        }
        // Checked on the UTF-8 view without decoding: a lookup by account runs this per call.
        let hex = text.utf8.dropFirst(Self.prefix.utf8.count)
        guard hex.count % 2 == 0, hex.allSatisfy({ Hex.nibble($0) != nil }) else {
            throw Self.invalid("the part after the prefix must be hex")
        }
        guard hex.count == 66 else {
            throw Self.invalid("it must hold a 33-byte compressed public key, got \(hex.count / 2) bytes")
        }
        rawValue = text
    }

    /// An id an operator typed or pasted: ASCII letters in any case (a spreadsheet or a log
    /// viewer may have upper-cased it), kept as the service writes it, lowercase. The service
    /// stores a backup under its lowercase id and compares ids as given, so an id sent or looked
    /// up in upper case names no backup. An id read from the service or an export is parsed as
    /// it is (``init(_:)``).
    /// - Throws: ``ConsoleError`` `invalid_backup_account_id`, as ``init(_:)``.
    public init(typed text: String) throws(ConsoleError) {
        let lowered =
            text.utf8.contains(where: { (0x41...0x5A).contains($0) })
            ? String(decoding: text.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self) : text
        try self.init(lowered)
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do {
            try self.init(text)
        } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }

    /// A short form for tables: prefix + first 8 and last 4 hex digits.
    public var abbreviated: String {
        let hex = rawValue.dropFirst(Self.prefix.count)
        return Self.prefix + hex.prefix(8) + "…" + hex.suffix(4)
    }

    public static func < (lhs: BackupAccountID, rhs: BackupAccountID) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    static func invalid(_ reason: String) -> ConsoleError {
        .invalid("invalid_backup_account_id", "Invalid Backup Account ID: \(reason).")
    }
}
