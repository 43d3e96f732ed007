import BackupCrypto
import BackupModel
import Foundation

/// A P-256 audit signing key's public half, as `audit keygen` prints it and `audit verify
/// --public-key` reads it.
public struct AuditPublicKey: Sendable, Equatable, Codable {
    /// The 33-byte compressed SEC1 point, lowercase hex.
    public var publicKey: String
    /// `sha256:` and the SHA-256 of the compressed point, lowercase hex.
    public var fingerprint: String

    /// - Throws: `invalid_public_key` when `bytes` is not a P-256 point (33 or 65 bytes).
    public init(bytes: [UInt8]) throws(ConsoleError) {
        guard P256.isValidPublicKey(bytes) else { throw Self.invalid() }
        let compressed = try P256.compress(bytes)
        publicKey = Hex.encode(compressed)
        fingerprint = "sha256:" + SHA256.hex(compressed)
    }

    /// The key in a `--public-key` file or argument: the hex point (33 or 65 bytes), or the
    /// JSON `audit keygen` printed (`{"publicKey": …}`); surrounding whitespace is ignored.
    public init(text: String) throws(ConsoleError) {
        var hex = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if hex.hasPrefix("{") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(hex.utf8)) as? [String: Any],
                let inner = object["publicKey"] as? String
            else { throw Self.invalid() }
            hex = inner
        }
        guard hex.count <= 130, let bytes = Hex.decode(hex.lowercased()) else { throw Self.invalid() }
        try self.init(bytes: bytes)
    }

    /// The point's bytes (always valid: checked when made).
    public var bytes: [UInt8] { Hex.decode(publicKey) ?? [] }

    static func invalid() -> ConsoleError {
        .invalid(
            "invalid_public_key",
            "The audit public key must be a P-256 point in hex (33 or 65 bytes), as `audit keygen` printed it.")
    }
}

/// The audit signing key's file: 64 hex digits and a newline, readable by its owner only.
///
/// It lives outside the database — whoever can rewrite the store must not also hold the key
/// that would let them sign a rewritten chain. The bytes read are wiped; the key never
/// appears in output, an error or the audit log.
public enum AuditKeyFile {
    /// Writes a new key to `path`, which must not exist yet, with mode 0600; returns its public half.
    /// - Throws: `key_file_exists` when `path` exists, `invalid_key_file` when it cannot be written.
    public static func generate(to path: String, random: any RandomSource) throws(ConsoleError) -> AuditPublicKey {
        let key = P256.generatePrivateKey(using: random)
        let publicKey = try AuditPublicKey(bytes: try P256.publicKey(privateKey: key, compressed: true))
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST {
                throw ConsoleError(
                    .conflict, code: "key_file_exists",
                    "\(path) already exists; audit keygen never overwrites a key (choose another --out).")
            }
            throw .invalid(
                "invalid_key_file", "Cannot create the key file \(path) (\(String(cString: strerror(errno)))).")
        }
        var text = key.withUnsafeBytes { Array(Hex.encode($0).utf8) } + [0x0a]
        defer { for i in text.indices { text[i] = 0 } }
        var offset = 0
        var failed = fchmod(fd, 0o600) != 0
        while !failed, offset < text.count {
            let n = text.withUnsafeBytes { raw in write(fd, raw.baseAddress.map { $0 + offset }, text.count - offset) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { failed = true } else { offset += n }
        }
        if !failed { failed = fsync(fd) != 0 }
        if close(fd) != 0 { failed = true }
        guard !failed else {
            unlink(path)
            throw .invalid("invalid_key_file", "Cannot write the key file \(path).")
        }
        return publicKey
    }

    /// Reads the private key at `path` after checking it is a regular file of mode 0600 or 0400.
    /// - Throws: `invalid_key_file`, `insecure_key_file` or `invalid_private_key`, in one line.
    public static func load(_ path: String) throws(ConsoleError) -> SecretBytes {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw .invalid("invalid_key_file", "The audit key file \(path) cannot be read.")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw .invalid("invalid_key_file", "The audit key file \(path) is not a regular file.")
        }
        let mode = info.st_mode & 0o777
        guard mode == 0o600 || mode == 0o400 else {
            throw .invalid(
                "insecure_key_file",
                "The audit key file \(path) has mode \(String(mode, radix: 8)); it must be 600 or 400 (chmod 600).")
        }
        guard var raw = FileManager.default.contents(atPath: path).map(Array.init) else {
            throw .invalid("invalid_key_file", "The audit key file \(path) cannot be read.")
        }
        defer { for i in raw.indices { raw[i] = 0 } }
        var digits = raw.filter { !($0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09) }
        defer { for i in digits.indices { digits[i] = 0 } }
        var ok = digits.count == 64
        let key = SecretBytes(count: 32) { out in
            guard ok else { return }
            for i in 0..<32 {
                guard let high = nibble(digits[2 * i]), let low = nibble(digits[2 * i + 1]) else {
                    ok = false
                    return
                }
                out[i] = high << 4 | low
            }
        }
        guard ok else {
            throw .invalid(
                "invalid_key_file", "The audit key file \(path) does not hold a P-256 private key (64 hex digits).")
        }
        guard P256.isValidPrivateKey(key) else { throw P256.invalidPrivateKey() }
        return key
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
