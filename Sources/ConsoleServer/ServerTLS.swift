import BackupModel
import NIOSSL

/// The server's TLS: TLS 1.2 or newer with forward-secret AEAD suites only, a certificate chain
/// and a private key read through ``InputFile`` (a FIFO or device is refused, never waited on),
/// the key only from a file its owner alone can read.
public enum ServerTLS {
    /// `--tls-min-version`.
    public enum Version: String, Sendable, CaseIterable {
        case v1_2 = "1.2"
        case v1_3 = "1.3"

        var nio: TLSVersion { self == .v1_2 ? .tlsv12 : .tlsv13 }

        /// Parses `1.2` or `1.3`.
        /// - Throws: `usage` for anything else (1.0 and 1.1 are not offered).
        public init(parsing text: String) throws(ConsoleError) {
            guard let version = Version(rawValue: text) else {
                throw .usage("--tls-min-version must be 1.2 or 1.3, got \(SecretShape.excerpt(text, limit: 16)).")
            }
            self = version
        }
    }

    /// TLS 1.2's suites: ECDHE key exchange, AES-GCM or ChaCha20-Poly1305 (no CBC, no SHA-1
    /// MACs, no static RSA). TLS 1.3's suites are all AEAD and are not configurable.
    static let tls12Suites = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    ].joined(separator: ":")

    /// The largest certificate chain or key file read.
    static let maxFileBytes = 1 << 20

    /// The server context for `--tls-cert` and `--tls-key`.
    /// - Throws: `invalid_tls_cert`, `invalid_tls_key` or `insecure_tls_key` (a key others may
    ///   read), one line naming the file and never its content.
    public static func context(certificate: String, key: String, minimumVersion: Version) throws(ConsoleError)
        -> NIOSSLContext
    {
        let chainBytes = try InputFile.read(
            certificate, what: "The certificate file given to --tls-cert", maxBytes: maxFileBytes,
            code: "invalid_tls_cert", kind: .configuration)
        var keyBytes = try InputFile.read(
            key, what: "The key file given to --tls-key", maxBytes: maxFileBytes, access: .ownerOnly,
            code: "invalid_tls_key", insecureCode: "insecure_tls_key", kind: .configuration)
        defer { for i in keyBytes.indices { keyBytes[i] = 0 } }
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMBytes(chainBytes)
        } catch {
            throw .configuration("invalid_tls_cert", "Cannot read a PEM certificate chain from \(certificate).")
        }
        guard !chain.isEmpty else { throw .configuration("invalid_tls_cert", "No certificate in \(certificate).") }
        let privateKey: NIOSSLPrivateKey
        do {
            privateKey = try NIOSSLPrivateKey(bytes: keyBytes, format: .pem)
        } catch {
            throw .configuration("invalid_tls_key", "Cannot read a PEM private key from \(key).")
        }
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(privateKey))
        tls.minimumTLSVersion = minimumVersion.nio
        tls.cipherSuites = tls12Suites
        do {
            return try NIOSSLContext(configuration: tls)
        } catch {
            throw .configuration(
                "invalid_tls_key",
                "The key in \(key) does not fit the certificate in \(certificate), or TLS cannot use them.")
        }
    }
}
