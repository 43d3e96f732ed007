import BackupCrypto
import BackupModel
import Foundation

/// Reads a P-256 key file (Turnkey API key or the tenant's cleanup key) into ``SecretBytes``.
///
/// The file must be a regular file that neither group nor others can read or write (mode
/// 0600 or 0400), checked before it is opened. Accepted contents: 64 hex digits (Turnkey's
/// `*.private` files, optionally followed by `:p256`), or JSON `{"privateKey": "<hex>", …}`.
/// The bytes read are wiped; the key never appears in an error.
public enum TurnkeyKeyFile {
    /// - Throws: ``ConsoleError`` `invalid_key_file`, `insecure_key_file` or `invalid_private_key`.
    public static func load(_ path: String, what: String = "key file") throws(ConsoleError) -> SecretBytes {
        try checkOwnerOnly(path, what: what)
        guard var raw = FileManager.default.contents(atPath: path).map(Array.init) else {
            throw .invalid("invalid_key_file", "The \(what) \(path) cannot be read.")
        }
        defer { for i in raw.indices { raw[i] = 0 } }
        guard let key = parse(raw) else {
            throw .invalid(
                "invalid_key_file",
                "The \(what) \(path) does not hold a P-256 private key (64 hex digits, or JSON with privateKey).")
        }
        guard P256.isValidPrivateKey(key) else { throw P256.invalidPrivateKey() }
        return key
    }

    /// Writes a key as 64 hex digits with mode 0600 (sandbox drills and tests).
    public static func write(_ key: SecretBytes, to path: String) throws(ConsoleError) {
        var hex = key.withUnsafeBytes { Array(Hex.encode($0).utf8) }
        defer { for i in hex.indices { hex[i] = 0 } }
        let created = FileManager.default.createFile(
            atPath: path, contents: Data(hex + [0x0a]), attributes: [.posixPermissions: 0o600])
        guard created else { throw .invalid("invalid_key_file", "Cannot write the key file \(path).") }
    }

    /// The file exists, is regular, and has no group or other permission bits.
    public static func checkOwnerOnly(_ path: String, what: String) throws(ConsoleError) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw .invalid("invalid_key_file", "The \(what) \(path) cannot be read.") }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw .invalid("invalid_key_file", "The \(what) \(path) is not a regular file.")
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw .invalid(
                "insecure_key_file",
                "The \(what) \(path) has mode \(String(mode, radix: 8)); it must be readable by its owner only (chmod 600)."
            )
        }
    }

    static func parse(_ raw: [UInt8]) -> SecretBytes? {
        var text = raw
        if text.first == UInt8(ascii: "{") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(raw)) as? [String: Any],
                let hex = object["privateKey"] as? String
            else { return nil }
            text = Array(hex.utf8)
        }
        let trimmed = text.split(separator: UInt8(ascii: ":"), maxSplits: 1).first.map(Array.init) ?? []
        let digits = trimmed.filter { !($0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09) }
        guard digits.count == 64 else { return nil }
        var ok = true
        let key = SecretBytes(count: 32) { out in
            for i in 0..<32 {
                guard let high = nibble(digits[2 * i]), let low = nibble(digits[2 * i + 1]) else {
                    ok = false
                    return
                }
                out[i] = high << 4 | low
            }
        }
        return ok ? key : nil
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
