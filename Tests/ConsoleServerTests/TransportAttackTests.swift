import BackupModel
import BackupctlTestSupport
import ConsoleClient
import ConsoleService
import Foundation
import Testing

/// TLS, file options and plain HTTP against a real `backupctl serve`: old protocol versions and
/// CBC suites refused even to a client willing to use them, a key others can read refused, a
/// FIFO given as any file refused at once instead of hanging, and a token never sent in clear
/// beyond loopback. Each running-server case ends with the operator served within 1 s.
@Suite(.serialized) struct TransportAttackTests {
    /// A self-signed P-256 certificate for 127.0.0.1 made by the openssl CLI (key mode 0600).
    static func certificate(in directory: URL) async throws -> (cert: String, key: String) {
        let cert = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        let made = try await ChildProcess.run(
            "openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj",
                "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "2", "-keyout", key, "-out", cert,
            ], environment: ["PATH": "/usr/bin:/bin"], seconds: 60)
        #expect(made.status == 0, "\(made.stderr)")
        chmod(key, 0o600)
        return (cert, key)
    }

    /// `openssl s_client` at the server with one protocol version and a cipher list that
    /// allows everything (`@SECLEVEL=0`: OpenSSL 3 otherwise refuses old versions itself).
    static func handshake(_ port: Int, _ version: String, cipher: String = "DEFAULT") async throws -> ChildResult {
        try await ChildProcess.run(
            "openssl",
            ["s_client", "-connect", "127.0.0.1:\(port)", "-\(version)", "-cipher", "\(cipher):@SECLEVEL=0"],
            environment: ["PATH": "/usr/bin:/bin"], seconds: 30)
    }

    /// The operator's `whoami` over TLS (trusting `cert`) within 1 s, as a bounded wait.
    static func servesOperatorOverTLS(_ server: AttackServer, cert: String) async -> Bool {
        guard let console = try? RemoteConsole(server: server.url, caFile: cert, timeout: .seconds(1)) else {
            return false
        }
        let caller = Caller(token: server.setup.rootToken, tenant: nil)
        return (try? await console.perform(WhoamiOperation(), as: caller).operator) == "root"
    }

    @Test func tlsOneAndOneOneAreRefusedEvenToAWillingClientAndTwelveAndThirteenServed() async throws {
        let keys = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: keys) }
        let pair = try await Self.certificate(in: keys)
        try await AttackServer.with(["--tls-cert", pair.cert, "--tls-key", pair.key]) { server in
            #expect(server.url.hasPrefix("https://"))
            for version in ["tls1", "tls1_1"] {
                let refused = try await Self.handshake(server.port, version)
                #expect(refused.status != 0, "\(version) was accepted: \(refused.stdout)")
                #expect(refused.stderr.contains("alert protocol version"), "\(version): \(refused.stderr)")
            }
            for (version, name) in [("tls1_2", "TLSv1.2"), ("tls1_3", "TLSv1.3")] {
                let accepted = try await Self.handshake(server.port, version)
                #expect(accepted.status == 0, "\(version): \(accepted.stderr)")
                #expect(accepted.stdout.contains("New, \(name)"), "\(version): \(accepted.stdout)")
            }
            // TLS 1.2 with CBC or without forward secrecy: refused.
            for suite in ["ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA384", "AES128-SHA"] {
                #expect(try await Self.handshake(server.port, "tls1_2", cipher: suite).status != 0, "\(suite)")
            }
            #expect(await Self.servesOperatorOverTLS(server, cert: pair.cert))
            // The client trusts the CA given by --ca-file, or by the context for that server
            // even when the run names the server itself; without either it fails in one line.
            let untrusted = try await server.client(["whoami"])
            #expect(untrusted.status == 78 && untrusted.stderr.contains("tls_untrusted"), "\(untrusted.stderr)")
            #expect(try await server.client(["--ca-file", pair.cert, "whoami"]).status == 0)
            let added = try await server.client(
                ["context", "add", "prod", "--server", server.url, "--ca-file", pair.cert],
                environment: ["BACKUPCTL_SERVER": ""])
            #expect(added.status == 0, "\(added.stderr)")
            let viaContext = try await server.client(["--server", server.url, "whoami"])
            #expect(viaContext.status == 0, "\(viaContext.stderr)")
        }
        try await AttackServer.with(["--tls-cert", pair.cert, "--tls-key", pair.key, "--tls-min-version", "1.3"]) {
            server in
            let twelve = try await Self.handshake(server.port, "tls1_2")
            let thirteen = try await Self.handshake(server.port, "tls1_3")
            #expect(twelve.status != 0 && thirteen.status == 0)
            #expect(await Self.servesOperatorOverTLS(server, cert: pair.cert))
        }
    }

    @Test func aKeyOthersCanReadAndAFIFOAreRefusedAtStartup() async throws {
        let keys = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: keys) }
        let pair = try await Self.certificate(in: keys)
        let fifo = keys.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let setup = try await StoreSetup(path: keys.appendingPathComponent("console.db").path)
        _ = setup
        let db = keys.appendingPathComponent("console.db").path
        chmod(pair.key, 0o644)
        let cases: [([String], Int32, String)] = [
            (["--tls-cert", pair.cert, "--tls-key", pair.key], 78, "insecure_tls_key"),
            (["--tls-cert", fifo, "--tls-key", pair.key], 78, "invalid_tls_cert"),
            (["--tls-cert", pair.cert, "--tls-key", fifo], 78, "invalid_tls_key"),
            (["--audit-key", fifo], 1, "invalid_key_file"),
            (["--tls-cert", "/dev/zero", "--tls-key", pair.key], 78, "invalid_tls_cert"),
        ]
        for (arguments, status, code) in cases {
            // A bounded wait: a FIFO must be refused, not waited on.
            let result = try await ChildProcess.run(
                BackupctlBinary.url.path, ["serve", "--listen", "127.0.0.1:0", "--db", db] + arguments,
                environment: ["PATH": "/usr/bin:/bin", "HOME": keys.path], seconds: 30)
            #expect(result.status == status, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(code), "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
    }

    @Test func aFIFOGivenToTheClientIsRefusedAtOnceAndTheServerServes() async throws {
        try await AttackServer.with { server in
            let fifo = server.directory.appendingPathComponent("fifo").path
            #expect(mkfifo(fifo, 0o600) == 0)
            let cases: [([String], [String: String], Int32, String)] = [
                (["whoami"], ["BACKUPCTL_CA_FILE": fifo], 78, "invalid_ca_file"),
                (["--ca-file", fifo, "whoami"], [:], 78, "invalid_ca_file"),
                (["--token-file", fifo, "whoami"], ["BACKUPCTL_TOKEN": ""], 78, "invalid_token_file"),
                (
                    ["--yes", "reset", "complete", "--token-file", fifo, "--signature", "AA=="], [:], 1,
                    "invalid_input_file"
                ),
                (["audit", "verify", "--public-key", fifo], [:], 1, "invalid_public_key"),
                (["recovery", "derive", "--root-key-file", fifo], [:], 1, "invalid_root_key_file"),
            ]
            for (arguments, environment, status, code) in cases {
                let result = try await server.client(["--tenant", "sandbox"] + arguments, environment: environment)
                #expect(result.status == status, "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains(code), "\(arguments): \(result.stderr)")
                #expect(await server.servesOperator(within: 1))
            }
            // A live tenant's key file on the server: the server refuses it, it does not hang.
            let created = try await server.client([
                "--format", "json", "tenant", "create", "live", "--turnkey-url", "https://198.51.100.7",
                "--turnkey-org", "org", "--turnkey-api-key-file", fifo,
            ])
            #expect(created.status == 1 && created.stderr.contains("invalid_key_file"), "\(created.stderr)")
            #expect(await server.servesOperator(within: 1))
        }
    }

    /// Plain HTTP to 10.1.2.3 inside a network namespace this test makes (`unshare -rn`: a
    /// user and network namespace, nothing on the host changes): the server runs there with
    /// `--insecure-plain-http`; the client refuses to send its token without the flag (no
    /// request reaches the server) and works with it.
    @Test func aTokenIsNeverSentInClearBeyondLoopback() async throws {
        let probe = try await ChildProcess.run(
            "unshare", ["-rn", "ip", "link", "set", "lo", "up"], environment: ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin"],
            seconds: 30)
        guard probe.status == 0 else {
            Issue.record("cannot make a network namespace here (unshare -rn: \(probe.stderr)); the case is untested")
            return
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("netns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let db = directory.appendingPathComponent("console.db").path
        let setup = try await StoreSetup(path: db)
        let script = """
            set -u
            ip link set lo up && ip addr add 10.1.2.3/32 dev lo || exit 90
            "$BIN" serve --listen 10.1.2.3:0 --db "$DB" --insecure-plain-http >"$DIR/serve.out" 2>"$DIR/serve.err" &
            pid=$!
            for i in $(seq 1 600); do grep -q listening "$DIR/serve.out" && break; sleep 0.1; done
            url=$(sed -n 's/.*"listening":"\\([^"]*\\)".*/\\1/p' "$DIR/serve.out")
            [ -n "$url" ] || { kill $pid; exit 91; }
            "$BIN" --server "$url" --format json whoami >/dev/null 2>"$DIR/refused.err"; echo "refused=$?"
            curl -s "$url/metrics" | grep -c 'op="whoami"' | sed 's/^/whoami_series_before=/'
            "$BIN" --server "$url" --insecure-plain-http --format json whoami; echo "allowed=$?"
            curl -s "$url/metrics" | grep -c 'op="whoami"' | sed 's/^/whoami_series_after=/'
            kill $pid; wait $pid
            """
        let result = try await ChildProcess.run(
            "unshare", ["-rn", "sh", "-c", script],
            environment: [
                "PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "BIN": BackupctlBinary.url.path, "DB": db,
                "DIR": directory.path,
                "HOME": directory.path, "BACKUPCTL_TOKEN": ServerFixture.text(setup.rootToken),
            ], seconds: 120)
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        let refused = (try? String(contentsOf: directory.appendingPathComponent("refused.err"), encoding: .utf8)) ?? ""
        #expect(result.stdout.contains("refused=78"), "\(result.stdout)")
        #expect(refused.contains("plain_http_refused") && refused.contains("--insecure-plain-http"), "\(refused)")
        // Nothing reached the server until the flag was given.
        #expect(result.stdout.contains("whoami_series_before=0"), "\(result.stdout)")
        #expect(
            result.stdout.contains(#""operator":"root""#) && result.stdout.contains("allowed=0"), "\(result.stdout)")
        #expect(!result.stdout.contains("whoami_series_after=0"), "\(result.stdout)")
    }
}
