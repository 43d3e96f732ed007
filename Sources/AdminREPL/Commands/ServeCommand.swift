import Access
import ArgumentParser
import BackupModel
import ConsoleServer
import ConsoleService
import Foundation
import Logging
import NIOCore
import PostgresStore

/// `serve --listen ADDR [--tls-cert F --tls-key F] [--insecure-plain-http]`: the store behind an
/// HTTP API, until SIGTERM or Ctrl-C. Operators then run `backupctl --server URL …`.
///
/// Its first line on stdout is `{"listening":"http://HOST:PORT"}` (https with TLS), written
/// once the socket is bound (with `--probe-listen`, also `"probes":"http://HOST:PORT"`, once
/// both are); logs go to stderr.
struct ServeCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the store over HTTP(S) to `backupctl --server URL` until SIGTERM or Ctrl-C.",
        discussion: """
            This process alone opens the store (--db), reads the tenants' credentials and writes the \
            audit. Plain HTTP is refused on a non-loopback address unless --insecure-plain-http. \
            SIGTERM (SIGINT, SIGHUP) stops accepting, lets in-flight requests finish \
            (--drain-seconds), and exits 0; a server still waiting on its store BACKUPCTL_STOP_GRACE_SECONDS \
            (60) after that ends with stop_timeout and 128 + the signal.
            """)

    @Option(help: "host:port to listen on (port 0 picks one; [::1]:PORT for IPv6).") var listen: String =
        "127.0.0.1:8443"
    @Option(
        name: .customLong("probe-listen"),
        help: ArgumentHelp(
            "Also answer /healthz, /readyz and /metrics (only) on this host:port, plain HTTP on a thread of its own, so probes never queue behind the API's work.",
            valueName: "host:port")) var probeListen: String?
    @Option(
        name: .customLong("work-nice"),
        help: ArgumentHelp(
            "With --probe-listen: run every other thread this many nice levels below the probe listener's (0…19, default 10; 0 keeps them alike), so a probe is answered ahead of busy cores.",
            valueName: "n"))
    var workNice: Int?
    @Option(name: .customLong("tls-cert"), help: "PEM certificate chain: serve HTTPS.") var tlsCert: String?
    @Option(name: .customLong("tls-key"), help: "PEM private key of --tls-cert.") var tlsKey: String?
    @Flag(name: .customLong("insecure-plain-http"), help: "Allow plain HTTP on a non-loopback address.")
    var insecurePlainHTTP = false
    @Option(
        help: "Sign audit checkpoints with this P-256 key (mode 0600, from `audit keygen`, kept outside the database).")
    var auditKey: String?
    @Option(
        help: ArgumentHelp(
            "With --audit-key: append every signed checkpoint to this file (JSON lines, fsynced), outside the store.",
            valueName: "file"))
    var auditWitness: String?
    @Option(
        help: ArgumentHelp(
            "The public key of an audit key this one replaced (repeatable): audit verify checks older checkpoints with it.",
            valueName: "file"))
    var auditRetiredKey: [String] = []
    @Flag(
        help: ArgumentHelp(
            "With --audit-key: accept the store's audit chain as it is now and anchor it (a restore from an older copy, a lost or not carried-over .hwm), recorded as an audit.rebased entry."
        ))
    var auditRebase = false
    @Option(help: "With --audit-key: sign a checkpoint every N audit entries.") var checkpointEntries: Int64 = 100
    @Option(help: "With --audit-key: and every N seconds while entries arrive.") var checkpointSeconds: Int = 60
    @Option(
        name: .customLong("tls-min-version"),
        help: ArgumentHelp("The oldest TLS version served: 1.2 (default) or 1.3.", valueName: "version"))
    var tlsMinVersion: String = "1.2"
    @Option(
        help: ArgumentHelp(
            "Connections served at once (1…65536); past it a connection still sending its request head (or idle) makes room. Default: half the open-file limit, 16…1024.",
            valueName: "n"))
    var maxConnections: Int?
    @Option(
        help: ArgumentHelp(
            "Connections from one client address (default: a quarter of --max-connections, at least 4).",
            valueName: "n"))
    var maxConnectionsPerAddress: Int?
    @Option(help: ArgumentHelp("Seconds to send a whole request head, TLS handshake included.", valueName: "s"))
    var headerTimeout: Double = 10
    @Option(help: ArgumentHelp("Seconds to send a request body once its head arrived.", valueName: "s"))
    var bodyTimeout: Double = 30
    @Option(help: ArgumentHelp("Seconds a kept connection may wait for its next request.", valueName: "s"))
    var idleTimeout: Double = 60
    @Option(help: ArgumentHelp("Seconds a client may leave an answer unread.", valueName: "s"))
    var writeTimeout: Double = 30
    @Option(
        help: ArgumentHelp(
            "Seconds a stop (SIGTERM, SIGINT, SIGHUP) lets requests in flight finish before it cancels them (1…3600).",
            valueName: "s"))
    var drainSeconds: Int = 30
    @Option(
        help: ArgumentHelp(
            "Requests one operator may make a second (bursts twice that); 0 for no limit.", valueName: "n"))
    var operatorRate: Int = 1000
    @Option(help: ArgumentHelp("Refused requests (audited) one operator may cause a window.", valueName: "n"))
    var operatorDenials: Int = 30
    @Option(
        help: ArgumentHelp(
            "The window of the failed sign-in and refusal budgets (5 per credential, 30 per address, 300 in all, --operator-denials).",
            valueName: "s"))
    var limitWindow: Int = 60
    @Option(
        help: ArgumentHelp(
            "Tenant T's `import` reads below DIR/T on this host, and nowhere else; without it the server takes no imports.",
            valueName: "dir"))
    var importRoot: String?
    @Option(
        help: ArgumentHelp(
            "A loopback, private or link-local host a tenant's Turnkey or Backup Service URL may name (repeatable).",
            valueName: "host"))
    var allowPrivateHost: [String] = []
    @Option(help: "Cleanup workers to run beside the API (0…64), on items `cleanup run --execute --queue` queued.")
    var workers: Int = 0
    @Option(help: "With --workers: a claim lapses this many seconds after the worker's last heartbeat (1…3600).")
    var workerLeaseSeconds: Int64 = 60

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        guard (1...1_000_000).contains(checkpointEntries), (1...86_400).contains(checkpointSeconds) else {
            throw ConsoleError.usage(
                "--checkpoint-entries must be 1…1000000 and --checkpoint-seconds 1…86400.")
        }
        guard (0...64).contains(workers), (1...3600).contains(workerLeaseSeconds) else {
            throw ConsoleError.usage("--workers must be 0…64 and --worker-lease-seconds 1…3600.")
        }
        let configuration = try serverConfiguration()
        try configuration.validate()
        let console = try LocalConsole(
            storePath: ctx.settings.dbPath, clock: ctx.clock, random: ctx.random, environment: ctx.environment,
            auditKeyPath: auditKey, auditCheckpointEvery: checkpointEntries, auditWitnessPath: auditWitness)
        var retired: [AuditPublicKey] = []
        for path in auditRetiredKey {
            retired.append(try AuditPublicKey(text: try AuditCommand.Verify.readPublicKey(path)))
        }
        console.trustRetiredAuditKeys(retired)
        guard auditWitness == nil || auditKey != nil else {
            throw ConsoleError.usage("--audit-witness goes with --audit-key.")
        }
        guard !auditRebase || auditKey != nil else { throw ConsoleError.usage("--audit-rebase goes with --audit-key.") }
        if let importRoot {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: importRoot, isDirectory: &isDirectory), isDirectory.boolValue
            else {
                throw ConsoleError.usage("--import-root must be an existing directory, got \(importRoot.prefix(200)).")
            }
        }
        console.serve(ServerPolicy(importRoot: importRoot, allowedPrivateHosts: Set(allowPrivateHost)))
        // Fails now, not on the first request, when there is no store — or when its audit
        // chain does not extend what the signer last signed (a rewritten store is never signed).
        _ = try await console.store()
        var logger = Logger(label: "backupctl.serve", factory: { ServerLogHandler.standardError(label: $0) })
        logger.logLevel =
            ctx.environment["BACKUPCTL_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .notice
        if auditKey == nil {
            // A store whose audit a signer has signed: every audited request would be refused
            // (`audit_signed_store`) while the probes said ready. Refused here, once, instead.
            do throws(ConsoleError) {
                try await console.checkAuditWrites()
            } catch {
                guard error.code == "audit_signed_store" else { throw error }
                throw ConsoleError.configuration(
                    "audit_signed_store",
                    "The audit of \(PostgresStoreConfiguration.displayed(ctx.settings.dbPath)) is signed (it holds signed checkpoints): start serve with --audit-key and the key that signs it; without it every audited request would be refused."
                )
            }
        }
        if auditRebase, let details = try await console.rebaseAuditAnchors() {
            logger.warning(
                "audit chain rebased: the store is anchored as it is",
                metadata: details.mapValues { Logger.MetadataValue.string($0) })
        } else if let adopted = try await console.checkAuditAnchors() {
            logger.warning(
                "audit entries past the newest checkpoint were signed at start (recorded as audit.unsigned_tail)",
                metadata: ["firstSeq": "\(adopted.lowerBound)", "lastSeq": "\(adopted.upperBound)"])
        }
        let server = ConsoleServer(console: console, configuration: configuration, logger: logger)
        StopDeadline.arm(command: "backupctl serve", drainSeconds: configuration.drainSeconds)
        EventLoopTakeover.install()
        // The workers stop after the server has drained (cancelled: items in hand finish first).
        let cleanup =
            workers > 0
            ? Task { [workers, workerLeaseSeconds, logger] in
                await console.runCleanupWorkers(
                    count: workers, leaseMillis: workerLeaseSeconds * 1000, logger: logger)
            } : nil
        defer { cleanup?.cancel() }
        do {
            let store = PostgresStoreConfiguration.displayed(ctx.settings.dbPath)
            try await server.run { [logger] url, probes in
                logger.notice("serving \(store) on \(url)")
                if let probes { logger.notice("probes (/healthz, /readyz, /metrics) on \(probes)") }
                // write(2) at once: a supervisor waits for this line before it starts clients.
                var line: [String: String] = ["listening": url]
                if let probes { line["probes"] = probes }
                FileHandle.standardOutput.write(Data((JSONLine.encode(line) + "\n").utf8))
            }
            cleanup?.cancel()
            await cleanup?.value
            await console.close()
        } catch let error as ConsoleError {
            await console.close()
            throw error
        } catch {
            await console.close()
            throw ConsoleError(
                .invalidInput, code: "listen_failed",
                "backupctl serve could not run on \(SecretShape.excerpt(listen, limit: 80)): \(String(describing: error).prefix(200))."
            )
        }
        return .empty
    }

    /// The options as the server's configuration (validated by the caller).
    func serverConfiguration() throws(ConsoleError) -> ConsoleServer.Configuration {
        func seconds(_ value: Double, _ option: String) throws(ConsoleError) -> TimeAmount {
            guard value.isFinite, (0.1...3600).contains(value) else {
                throw .usage("--\(option) must be 0.1…3600 seconds.")
            }
            return .milliseconds(Int64(value * 1000))
        }
        guard (1...3600).contains(drainSeconds) else { throw .usage("--drain-seconds must be 1…3600.") }
        let maxConnections = maxConnections ?? ConsoleServer.Configuration.defaultMaxConnections()
        let connections = ConnectionLimits(
            maxConnections: maxConnections, maxPerAddress: maxConnectionsPerAddress,
            headerTimeout: try seconds(headerTimeout, "header-timeout"),
            bodyTimeout: try seconds(bodyTimeout, "body-timeout"),
            idleTimeout: try seconds(idleTimeout, "idle-timeout"),
            writeTimeout: try seconds(writeTimeout, "write-timeout"))
        return ConsoleServer.Configuration(
            listen: try ListenAddress(parsing: listen), tlsCertificate: tlsCert, tlsKey: tlsKey,
            allowPlainHTTP: insecurePlainHTTP, drainSeconds: drainSeconds, checkpointEverySeconds: checkpointSeconds,
            connections: connections,
            tlsMinimumVersion: try ServerTLS.Version(parsing: tlsMinVersion),
            requestLimits: RequestLimits(
                operatorRate: operatorRate, operatorDenials: operatorDenials,
                windowMillis: Int64(clamping: limitWindow) * 1000),
            probeListen: try probeListen.map { address throws(ConsoleError) in try ListenAddress(parsing: address) },
            workNice: workNice ?? (probeListen == nil ? 0 : Self.defaultWorkNice))
    }

    /// `--work-nice` when `--probe-listen` is given alone: under 64 connections of lookups on two
    /// cores, a probe's p99 was 3.6–4 ms with one priority for all, 1.3–2 ms with the work 5
    /// levels down and 0.5–1.4 ms with 10.
    static let defaultWorkNice = 10
}
