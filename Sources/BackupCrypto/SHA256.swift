import BackupModel
internal import COpenSSL
import Foundation

/// SHA-256 through OpenSSL's EVP interface.
///
/// Used for the /reset challenge digest, Turnkey stamps, V0 Root Key material and the audit
/// chain. A hash never fails for valid input; an OpenSSL failure here (allocation) traps with a
/// message rather than returning a wrong digest.
public enum SHA256 {
    /// The 32-byte digest of `bytes`.
    public static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        if let digest = bytes.withContiguousStorageIfAvailable({ hash(raw: UnsafeRawBufferPointer($0)) }) {
            return digest
        }
        return Array(bytes).withUnsafeBytes { hash(raw: $0) }
    }

    /// The 32-byte digest of `data`.
    public static func hash(_ data: Data) -> [UInt8] {
        data.withUnsafeBytes { hash(raw: $0) }
    }

    /// The lowercase hex digest of `bytes`.
    public static func hex(_ bytes: some Collection<UInt8>) -> String {
        Hex.encode(hash(bytes))
    }

    /// The digest of a secret, kept secret (V0 Root Key material is such a digest).
    public static func hash(secret: SecretBytes) -> SecretBytes {
        secret.withUnsafeBytes { input in
            SecretBytes(count: 32) { output in digest(input, into: output) }
        }
    }

    private static func hash(raw: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { buffer, initialized in
            digest(raw, into: UnsafeMutableRawBufferPointer(buffer))
            initialized = 32
        }
    }

    /// The algorithm fetched once: `EVP_sha256()` makes OpenSSL 3 look the implementation up
    /// in its provider store on every digest (locks and a property query), which cost more than
    /// hashing a token or an audit entry.
    nonisolated(unsafe) private static let algorithm: OpaquePointer = {
        guard let fetched = EVP_MD_fetch(nil, "SHA2-256", nil) else { fatalError("OpenSSL has no SHA2-256") }
        return fetched
    }()

    private static func digest(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        precondition(output.count >= 32)
        var length: UInt32 = 0
        // EVP_Digest reads nothing when the count is 0, but it wants a non-null pointer.
        var empty: UInt8 = 0
        let rc = withUnsafePointer(to: &empty) { emptyPointer in
            EVP_Digest(
                input.baseAddress ?? UnsafeRawPointer(emptyPointer), input.count,
                output.baseAddress?.assumingMemoryBound(to: UInt8.self), &length, algorithm, nil)
        }
        precondition(rc == 1 && length == 32, "OpenSSL SHA-256 failed")
    }
}
