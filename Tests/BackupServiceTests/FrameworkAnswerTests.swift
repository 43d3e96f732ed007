import BackupModel
import BackupServiceSandbox
import Foundation
import SandboxIdentity
import Testing

/// The answers the HTTP framework gives, not the app: plain text, not the envelope.
@Suite struct FrameworkAnswerTests {
    @Test func plainAnswersAndTheRootRoutes() async throws {
        let h = try await FlowHarness()
        defer { Task { await h.stop() } }
        var reply = try await h.send("/health", method: "GET", contentType: nil)
        #expect(reply.status == 200 && reply.text == #"{"rev":null,"semver":"0.9.5","status":"ok"}"#)
        reply = try await h.send("/health", method: "HEAD", contentType: nil)
        #expect(reply.status == 200 && reply.body.isEmpty)
        reply = try await h.send("/ready", method: "GET", contentType: nil)
        #expect(reply.status == 200 && reply.text == #"{"status":"ok"}"#)
        reply = try await h.send("/openapi.json", method: "GET", contentType: nil)
        #expect(reply.status == 404, "no API docs in production")
        reply = try await h.send("/v1/sync/challenge/keypair", method: "GET", contentType: nil)
        #expect(reply.status == 405)
        reply = try await h.send("/v1/sync/challenge/keypair", raw: Array("{}".utf8), contentType: "text/plain")
        #expect(reply.status == 415 && reply.contentType?.hasPrefix("text/plain") == true)
        reply = try await h.send("/v1/sync/challenge/keypair", raw: Array("{".utf8))
        #expect(reply.status == 400 && reply.text.hasPrefix("Failed to parse the request body as JSON"))
        reply = try await h.send("/v1/delete-factor/challenge/keypair", json: .object([:]))
        #expect(
            reply.status == 422
                && reply.text == "Failed to deserialize the JSON body into the target type: missing field `factorId`")
        reply = try await h.send(
            "/v1/reset/challenge/keypair", json: .object(["backupAccountId": .string("backup_account_00")]))
        #expect(
            reply.status == 422
                && reply.text.hasSuffix("Invalid backup account ID. Expected 33 bytes after the prefix."))
        reply = try await h.send("/v1/backup/status", json: .object(["backupId": .string("backup_account_none")]))
        #expect(reply.status == 404 && reply.code == "not_found" && reply.message == "Not Found")
        #expect(reply.json?["allowRetry"] == .bool(false))
        // The passkey challenges read no body.
        reply = try await h.send("/v1/retrieve/challenge/passkey", contentType: nil)
        #expect(reply.status == 200 && reply.json?["challenge"]?["publicKey"]?["rpId"]?.stringValue == "keys.world.app")
        await h.stop()
    }

    /// axum's `Json` takes `application/json` and any `application/…+json`, with parameters;
    /// its default body limit is 2 MB outside the upload routes, which pre-check a
    /// `Content-Length` over 16 MiB with the app's own error.
    @Test func contentTypesAndBodyLimitsAreTheFrameworks() async throws {
        let h = try await FlowHarness()
        defer { Task { await h.stop() } }
        let status = Array(#"{"backupId":"backup_account_none"}"#.utf8)
        for type in [
            "application/json", "application/json; charset=utf-8", "application/vnd.api+json", "Application/JSON",
        ] {
            let reply = try await h.send("/v1/backup/status", raw: status, contentType: type)
            #expect(reply.status == 404 && reply.code == "not_found", "\(type): \(reply.status)")
        }
        for type in ["application/jsonx", "text/json", "application/+json", "json"] {
            let reply = try await h.send("/v1/backup/status", raw: status, contentType: type)
            #expect(reply.status == 415, "\(type): \(reply.status)")
        }
        let big =
            Array(#"{"backupId":""#.utf8) + Array(repeating: UInt8(ascii: "a"), count: 3_000_000) + Array(#""}"#.utf8)
        var reply = try await h.send("/v1/backup/status", raw: big)
        #expect(reply.status == 413 && reply.contentType?.hasPrefix("text/plain") == true, "\(reply.status)")
        #expect(reply.text == "Failed to buffer the request body: length limit exceeded")
        reply = try await h.send(
            "/v1/sync", raw: Array(repeating: 0x2d, count: 17 * 1024 * 1024),
            contentType: "multipart/form-data; boundary=b")
        #expect(reply.status == 413 && reply.code == "content_too_large", "\(reply.status) \(reply.text.prefix(80))")
        await h.stop()
    }

    @Test func theSandboxFaultHeaderFailsBeforeAnyEffect() async throws {
        let h = try await FlowHarness()
        defer { Task { await h.stop() } }
        let user = try FlowUser(h.random)
        let payload = try await h.keychainCreatePayload(user)
        let form = Multipart.encode(
            [("payload", nil, nil, SortedJSON.bytes(payload)), ("backup", nil, nil, [1])], boundary: "b")
        var reply = try await h.send(
            "/v1/create", raw: form.body, contentType: form.contentType,
            headers: [BackupServiceEmulator.faultHeader: "unavailable"])
        #expect(reply.status == 500 && reply.code == "internal_server_error")
        #expect(h.metadataFile(user.backupId) == nil && h.indexFile().isEmpty)
        reply = try await h.send("/v1/create", raw: form.body, contentType: form.contentType)
        #expect(reply.status == 200, "the tokens were not spent: \(reply.text)")
        await h.stop()
    }
}
