import BackupModel
import BackupctlTestSupport
import ConsoleClient
import ConsoleServer
import ConsoleService
import Foundation
import Testing

/// HTTPS with a self-signed certificate made here by the openssl CLI.
@Suite(.timeLimit(.minutes(10))) struct TLSTests {
    /// A self-signed P-256 certificate for 127.0.0.1: (certificate, key) PEM paths.
    static func selfSigned(in directory: URL) async throws -> (cert: String, key: String) {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let cert = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        let made = try await ChildProcess.run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj",
                "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "2", "-keyout", key, "-out", cert,
            ], environment: ["PATH": "/usr/bin:/bin"], seconds: 60)
        guard made.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: ["stderr": made.stderr]) }
        return (cert, key)
    }

    @Test func roundTripOverTLSWithTheServersCertificateTrusted() async throws {
        let keys = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: keys) }
        let pair = try await Self.selfSigned(in: keys)
        try await ServerFixture.with(configuration: {
            ConsoleServer.Configuration(listen: $0, tlsCertificate: pair.cert, tlsKey: pair.key)
        }) { fixture in
            #expect(fixture.url.hasPrefix("https://127.0.0.1:"))
            let caller = Caller(token: fixture.rootToken, tenant: "sandbox")
            let trusted = try RemoteConsole(server: fixture.url, caFile: pair.cert, timeout: .seconds(30))
            #expect(try await trusted.perform(WhoamiOperation(), as: caller).operator == "root")
            #expect(try await trusted.perform(StatsOperation(), as: caller).tenant == "sandbox")
            // Without the CA the certificate is not trusted: nothing is sent.
            let untrusted = try RemoteConsole(server: fixture.url, timeout: .seconds(30))
            do {
                _ = try await untrusted.perform(WhoamiOperation(), as: caller)
                Issue.record("an untrusted certificate was accepted")
            } catch let error as ConsoleError {
                // One line with a hint, as a configuration error (exit 78), no BoringSSL dump.
                #expect(
                    error.kind == .configuration && error.code == "tls_untrusted",
                    "\(error.kind) \(error.code): \(error.message)")
                #expect(error.message.contains("--ca-file") && !error.message.contains("\n"))
            }
        }
    }

    @Test func halfATLSPairOrANonLoopbackPlainAddressIsRefused() throws {
        let loopback = try ListenAddress(parsing: "127.0.0.1:0")
        #expect(throws: ConsoleError.self) {
            try ConsoleServer.Configuration(listen: loopback, tlsCertificate: "c.pem").validate()
        }
        let open = try ListenAddress(parsing: "0.0.0.0:8443")
        #expect(throws: ConsoleError.self) { try ConsoleServer.Configuration(listen: open).validate() }
        try ConsoleServer.Configuration(listen: open, allowPlainHTTP: true).validate()
        try ConsoleServer.Configuration(listen: open, tlsCertificate: "c.pem", tlsKey: "k.pem").validate()
        try ConsoleServer.Configuration(listen: try ListenAddress(parsing: "[::1]:0")).validate()
        try ConsoleServer.Configuration(listen: try ListenAddress(parsing: "localhost:0")).validate()
        #expect(!(try ListenAddress(parsing: "10.0.0.1:80")).isLoopback)
        #expect(!(try ListenAddress(parsing: "127.example.com:80")).isLoopback)
        #expect(throws: ConsoleError.self) { try ListenAddress(parsing: "127.0.0.1") }
        #expect(throws: ConsoleError.self) { try ListenAddress(parsing: "127.0.0.1:70000") }
    }
}
