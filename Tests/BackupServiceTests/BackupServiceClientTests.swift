import BackupCrypto
import BackupModel
import BackupService
import BackupServiceSandbox
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Testing

/// The client against the sandbox service over real loopback HTTP, and the sandbox's own
/// fidelity to the service's routes, envelope, framework answers and order of checks.
@Suite struct BackupServiceClientTests {
    /// An export directory with one backup (metadata and blob) and its index row.
    final class Export {
        let directory: URL
        let id: BackupAccountID
        let secret: [UInt8]

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("bsexport-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let rng = SeededRandom(seed: 3)
            secret = Secp256k1.generateSecretKey(using: rng).withUnsafeBytes { Array($0) }
            id = BackupAccountID(compressedPublicKey: try Secp256k1.publicKey(secretKey: SecretBytes(secret)))
            let metadata = BackupMetadata(
                id: id.rawValue, manifestHash: Hex.encode(rng.bytes(32)),
                factors: [
                    Factor(
                        id: rng.uuid(), createdAt: Timestamp(seconds: 1_770_000_000),
                        kind: .oidcAccount(
                            OIDCAccountFactor(
                                account: OIDCAccount(provider: .apple, sub: "001", maskedEmail: nil),
                                turnkeyProviderId: rng.uuid())))
                ], syncFactors: [], keys: [])
            let folder = directory.appendingPathComponent(id.rawValue)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try metadata.encoded(.stored).write(to: folder.appendingPathComponent("metadata"))
            try Data([1, 2, 3]).write(to: folder.appendingPathComponent("backup"))
            try Data(
                #"{"PK":"MAIN#OIDC|https://appleid.apple.com|001","BackupId":"\#(id.rawValue)"}\#n{"PK":"MAIN#PK|x","BackupId":"other"}\#n"#
                    .utf8
            ).write(to: directory.appendingPathComponent("factor_lookup.jsonl"))
        }

        deinit { try? FileManager.default.removeItem(at: directory) }

        func sign(_ challenge: [UInt8]) throws -> String {
            Base64.encode(try Secp256k1.sign(digest: SHA256.hash(challenge), secretKey: SecretBytes(secret)))
        }
    }

    func serve(_ export: Export, clock: WallClock = .system, faults: ServiceFaults = ServiceFaults()) async throws
        -> (BackupServiceSandboxServer, BackupServiceClient)
    {
        let emulator = BackupServiceEmulator(
            backend: try ExportBackend(directory: export.directory.path), key: Array(repeating: 7, count: 32),
            clock: clock, faults: faults)
        let server = try await BackupServiceSandboxServer.start(emulator)
        let client = try BackupServiceClient(
            baseURL: server.baseURL, timeoutMillis: 30_000, attempts: 3, backoffCapMillis: 0)
        return (server, client)
    }

    @Test func healthStatusChallengeAndResetOverHTTP() async throws {
        let export = try Export()
        let (server, client) = try await serve(export)
        let health = try await client.health()
        #expect(health == BackupServiceWire.Health(status: "ok", semver: "0.9.5", rev: nil))
        let status = try await client.status(backupId: export.id.rawValue)
        #expect(status.factors == [BackupServiceWire.StatusFactor(kind: "OIDC_ACCOUNT", accountKind: "APPLE")])
        let issued = try await client.resetChallenge(backupAccountId: export.id.rawValue)
        try await client.reset(
            backupAccountId: export.id.rawValue, signature: try export.sign(issued.challenge), token: issued.token)
        // Blob, metadata and the backup's index rows are gone; other rows stay.
        #expect(
            !FileManager.default.fileExists(atPath: export.directory.appendingPathComponent(export.id.rawValue).path))
        let index = try String(
            contentsOf: export.directory.appendingPathComponent("factor_lookup.jsonl"), encoding: .utf8)
        #expect(!index.contains(export.id.rawValue) && index.contains("\"other\""))
        await #expect(throws: BackupServiceError.self) { try await client.status(backupId: export.id.rawValue) }
        // Replaying the token: the backup is gone, so not_found (existence before single use).
        let replay = await error {
            try await client.reset(
                backupAccountId: export.id.rawValue, signature: try export.sign(issued.challenge), token: issued.token)
        }
        #expect(replay?.kind == .service(status: 404, code: "not_found"))
        #expect(replay?.consoleError.kind == .notFound)
        await server.stop()
    }

    @Test func theServicesOrderOfChecks() async throws {
        let export = try Export()
        let time = ManualTime(1_790_000_000_000)
        let (server, client) = try await serve(export, clock: .manual(time))
        let id = export.id.rawValue
        let issued = try await client.resetChallenge(backupAccountId: id)
        let good = try export.sign(issued.challenge)
        let other = "backup_account_02" + String(repeating: "ff", count: 32)
        // Context before the id's point: the token was made for `id`.
        #expect(
            await code { try await client.reset(backupAccountId: other, signature: good, token: issued.token) }
                == "invalid_challenge_context")
        #expect(
            await code { try await client.reset(backupAccountId: id, signature: "%%%", token: issued.token) }
                == "invalid_signature")
        let wrong = try export.sign(Array(repeating: 0, count: 32))
        #expect(
            await code { try await client.reset(backupAccountId: id, signature: wrong, token: issued.token) }
                == "signature_verification_error")
        #expect(
            await code {
                try await client.reset(backupAccountId: id, signature: good, token: SecretBytes(Array("sbx.a.b".utf8)))
            } == "jwt_error")
        // None of these burned the token or touched the backup.
        #expect(try await client.status(backupId: id).backupId == id)
        time.advance(byMillis: 901_000)
        #expect(
            await code { try await client.reset(backupAccountId: id, signature: good, token: issued.token) }
                == "jwt_error")
        await server.stop()
    }

    @Test func frameworkAnswersArePlainTextWithConsoleCodes() async throws {
        let export = try Export()
        let emulator = BackupServiceEmulator(
            backend: try ExportBackend(directory: export.directory.path), key: Array(repeating: 7, count: 32))
        let noType = await emulator.handle(method: "POST", path: "/v1/reset", contentType: nil, body: Array("{}".utf8))
        #expect(noType.status == 415 && noType.contentType?.hasPrefix("text/plain") == true)
        let notJSON = await emulator.handle(
            method: "POST", path: "/v1/reset", contentType: "application/json", body: Array("{nope".utf8))
        #expect(notJSON.status == 400)
        let missing = await emulator.handle(
            method: "POST", path: "/v1/reset", contentType: "application/json",
            body: Array(#"{"backupAccountId":"backup_account_00"}"#.utf8))
        #expect(missing.status == 422)
        let badShape = await emulator.handle(
            method: "POST", path: "/v1/reset/challenge/keypair", contentType: "application/json",
            body: Array(#"{"backupAccountId":"backup_account_00"}"#.utf8))
        #expect(badShape.status == 422)
        // The client maps those plain-text answers to console codes with exit-1 kinds.
        let client = try BackupServiceClient(baseURL: "http://127.0.0.1:1")
        let mapped = [415, 400, 422, 413, 408].map { client.unexpectedForTests("/v1/reset", $0, Array("text".utf8)) }
        #expect(
            mapped.map(\.consoleError.code) == [
                "backup_service_unsupported_media_type", "backup_service_bad_request", "backup_service_unprocessable",
                "backup_service_body_too_large", "backup_service_timeout",
            ])
        #expect(
            mapped.map(\.consoleError.kind) == [.invalidInput, .invalidInput, .invalidInput, .invalidInput, .remote])
        // An envelope keeps the service's code; its text is escaped, never raw.
        let envelope = client.unexpectedForTests(
            "/v1/reset", 400,
            Array(#"{"allowRetry":false,"error":{"code":"already_used","message":"x\u001b[2Jy"}}"#.utf8))
        #expect(envelope.serviceCode == "already_used" && !envelope.message.contains("\u{1B}"))
    }

    @Test(.timeLimit(.minutes(10))) func anAnswerThatStallsMidBodyIsATimeout() async throws {
        let server = try StallingServer()
        defer { server.stop() }
        let client = try BackupServiceClient(baseURL: server.baseURL, timeoutMillis: 300)
        let error = await #expect(throws: BackupServiceError.self) { _ = try await client.health() }
        #expect(error?.kind == .timeout)
    }

    /// `/v1/reset` waits for its own, longer deadline (by default past the service's 30 s):
    /// the timeout names it.
    @Test(.timeLimit(.minutes(10))) func aResetWaitsForItsOwnDeadline() async throws {
        let server = try StallingServer()
        defer { server.stop() }
        let client = try BackupServiceClient(baseURL: server.baseURL, timeoutMillis: 100, resetTimeoutMillis: 400)
        let error = await #expect(throws: BackupServiceError.self) {
            try await client.reset(backupAccountId: "backup_account_00", signature: "AA==", token: SecretBytes([1]))
        }
        #expect(error?.kind == .timeout && error?.outcomeUnknown == true)
        #expect(error?.message.contains("/v1/reset within 400 ms") == true)
        #expect(try BackupServiceClient(baseURL: server.baseURL).resetTimeoutMillis == 35_000)
    }

    @Test func statusAndChallengeRetryResetDoesNot() async throws {
        let export = try Export()
        let faults = ServiceFaults()
        let (server, client) = try await serve(export, faults: faults)
        faults.fail("/v1/backup/status", status: 503, count: 2)
        #expect(try await client.status(backupId: export.id.rawValue).factors.count == 1)
        faults.fail("/v1/backup/status", status: 503, count: 3)
        let exhausted = await error { _ = try await client.status(backupId: export.id.rawValue) }
        #expect(exhausted?.consoleError.kind == .remote)
        let issued = try await client.resetChallenge(backupAccountId: export.id.rawValue)
        faults.fail("/v1/reset", status: 500, count: 1)
        let once = await error {
            try await client.reset(
                backupAccountId: export.id.rawValue, signature: try export.sign(issued.challenge), token: issued.token)
        }
        #expect(once?.kind == .service(status: 500, code: "internal_server_error"))
        #expect(once?.consoleError.kind == .remote)
        // Not retried: the next call with the same token goes through.
        try await client.reset(
            backupAccountId: export.id.rawValue, signature: try export.sign(issued.challenge), token: issued.token)
        await server.stop()
    }

    @Test func droppedConnectionIsAnUnknownOutcome() async throws {
        let export = try Export()
        let faults = ServiceFaults()
        let (server, client) = try await serve(export, faults: faults)
        let issued = try await client.resetChallenge(backupAccountId: export.id.rawValue)
        faults.dropAfterReset()
        let lost = await error {
            try await client.reset(
                backupAccountId: export.id.rawValue, signature: try export.sign(issued.challenge), token: issued.token)
        }
        #expect(lost?.outcomeUnknown == true)
        // The service did commit: status now says not_found.
        let status = await error { _ = try await client.status(backupId: export.id.rawValue) }
        #expect(status?.serviceCode == "not_found")
        await server.stop()
        let refused = await error { _ = try await client.health() }
        #expect(refused?.kind == .transport && refused?.consoleError.code == "backup_service_unavailable")
    }

    @Test func urlsAreChecked() throws {
        for bad in ["", "ftp://x", "https://", "https://h/?q=1", "not a url", "https://user@h"] {
            #expect(throws: ConsoleError.self) { _ = try BackupServiceClient.normalize(bad) }
        }
        #expect(try BackupServiceClient.normalize("https://h.example:8443/") == "https://h.example:8443")
    }

    func error(_ body: () async throws -> Void) async -> BackupServiceError? {
        do {
            try await body()
            return nil
        } catch let error as BackupServiceError {
            return error
        } catch {
            return nil
        }
    }

    func code(_ body: () async throws -> Void) async -> String? {
        await error(body)?.serviceCode
    }
}

/// A token of another challenge type, sealed with the emulator's key: the service's step 2.
@Suite struct EmulatorTokenTests {
    @Test func aTokenOfAnotherTypeIsUnexpectedChallengeType() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bstoken-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let emulator = BackupServiceEmulator(
            backend: try ExportBackend(directory: directory.path), key: Array(repeating: 9, count: 32))
        let id = "backup_account_02" + String(repeating: "ab", count: 32)
        let token = emulator.sealForTests(type: "OIDC", backupAccountId: id, expires: Int64.max / 2)
        let body = #"{"backupAccountId":"\#(id)","signature":"AA==","challengeToken":"\#(token)"}"#
        let answer = await emulator.handle(
            method: "POST", path: "/v1/reset", contentType: "application/json", body: Array(body.utf8))
        #expect(answer.status == 400)
        #expect(String(decoding: answer.body, as: UTF8.self).contains("unexpected_challenge_type"))
    }
}
