import AsyncHTTPClient
import BackupModel
import ConsoleService
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// Every answer says what happened in its status and headers: a long job refused before it
/// runs gets its real status (never a 200 with the error inside), 413, 415, 405 with `Allow`,
/// 401 with `WWW-Authenticate`, 429 with `Retry-After`, `Cache-Control: no-store` and an
/// `X-Request-Id` on every answer, and the same id in the audit entries of the request.
@Suite struct HonestStatusTests {
    struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var body: String
        var code: String? { ServerFixture.errorCode(body) }
    }

    static func send(
        _ fixture: ServerFixture, _ path: String, method: HTTPMethod = .POST, bearer: String? = nil,
        headers extra: [(String, String)] = [("Content-Type", "application/json")], body: String? = "{}"
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: fixture.url + path)
        request.method = method
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer " + bearer) }
        for (name, value) in extra { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        var buffer = try await response.body.collect(upTo: 16 << 20)
        return Answer(
            status: Int(response.status.code), headers: response.headers,
            body: buffer.readString(length: buffer.readableBytes) ?? "")
    }

    @Test func longJobsAreRefusedWithTheirRealStatusBeforeAny200() async throws {
        try await ServerFixture.with { fixture in
            let bob = ServerFixture.text(fixture.bobToken)
            let root = ServerFixture.text(fixture.rootToken)
            let tenant = [("Content-Type", "application/json"), (Wire.tenantHeader, "sandbox")]
            // A viewer may not seed: 403 and an error document, not a 200 stream.
            let refused = try await Self.send(
                fixture, "/v1/ops/seed", bearer: bob, headers: tenant, body: #"{"backups":5,"orphans":0,"seed":1}"#)
            #expect(refused.status == 403 && refused.code == "permission_denied", "\(refused.body)")
            #expect(refused.headers["Content-Type"].first == "application/json")
            // No body, random bytes, a body of another shape: 400 before anything runs.
            #expect(
                try await Self.send(fixture, "/v1/ops/seed", bearer: root, headers: tenant, body: nil).status == 400)
            #expect(
                try await Self.send(fixture, "/v1/ops/seed", bearer: root, headers: tenant, body: "\u{1}x").status
                    == 400)
            let shape = try await Self.send(
                fixture, "/v1/ops/seed", bearer: root, headers: tenant, body: #"{"backups":"5"}"#)
            #expect(shape.status == 400 && shape.body.contains("backups"), "\(shape.body)")
            // A body two readers could read two ways (a name twice, which JSONDecoder would
            // take the first of) or that is not RFC 8259 (a trailing comma): 400, saying where.
            let twice = try await Self.send(
                fixture, "/v1/ops/seed", bearer: root, headers: tenant,
                body: #"{"backups":500000,"orphans":0,"seed":1,"backups":1}"#)
            #expect(twice.status == 400 && twice.code == "invalid_request", "\(twice.body)")
            #expect(twice.body.contains("a name repeated in one object at byte 39"), "\(twice.body)")
            let comma = try await Self.send(
                fixture, "/v1/ops/seed", bearer: root, headers: tenant, body: #"{"backups":1,"orphans":0,"seed":1,}"#)
            #expect(comma.status == 400 && comma.body.contains("expected a name at byte 34"), "\(comma.body)")
            // Input the operation refuses: 422.
            let bad = try await Self.send(
                fixture, "/v1/ops/check", bearer: root, headers: tenant,
                body: #"{"filter":{"minimum":"warn"},"limit":0}"#)
            #expect(bad.status == 422 && bad.code == "invalid_limit", "\(bad.body)")
            // A job that runs: 200 with JSON lines ending in a result frame.
            let ran = try await Self.send(
                fixture, "/v1/ops/seed", bearer: root, headers: tenant, body: #"{"backups":3,"orphans":0,"seed":1}"#)
            #expect(ran.status == 200 && ran.headers["Content-Type"].first == Wire.jsonLines)
            // Its connection closes with the answer, and the answer says so: a client that sent
            // its next request on it would lose that request.
            #expect(ran.headers["Connection"].first == "close")
            #expect(ran.body.split(separator: "\n").last?.hasPrefix(#"{"result":"#) == true, "\(ran.body)")
        }
    }

    @Test func bodiesMediaTypesAndMethodsAreJudgedAtTheDoor() async throws {
        try await ServerFixture.with { fixture in
            let root = ServerFixture.text(fixture.rootToken)
            let form = try await Self.send(
                fixture, "/v1/ops/whoami", bearer: root,
                headers: [("Content-Type", "application/x-www-form-urlencoded")])
            #expect(form.status == 415 && form.code == "unsupported_media_type")
            let huge = try await Self.send(
                fixture, "/v1/ops/whoami", bearer: root, body: String(repeating: " ", count: (1 << 20) + 10) + "{}")
            #expect(huge.status == 413 && huge.code == "body_too_large")
            // A field-less operation takes {} and nothing else.
            #expect(try await Self.send(fixture, "/v1/ops/whoami", bearer: root, body: "42").status == 400)
            #expect(try await Self.send(fixture, "/v1/ops/whoami", bearer: root, body: #"{"x":1}"#).status == 400)
            #expect(try await Self.send(fixture, "/v1/ops/whoami", bearer: root).status == 200)
            // The auth scheme is case-insensitive; anything else before the token is not it.
            for scheme in ["bearer", "BEARER"] {
                let answer = try await Self.send(
                    fixture, "/v1/ops/whoami",
                    headers: [
                        ("Content-Type", "application/json"),
                        ("Authorization", "\(scheme) \(ServerFixture.text(fixture.rootToken))"),
                    ])
                #expect(answer.status == 200, "\(scheme): \(answer.body)")
            }
            let basic = try await Self.send(
                fixture, "/v1/ops/whoami",
                headers: [("Content-Type", "application/json"), ("Authorization", "Basic dXNlcjpwYXNz")])
            #expect(basic.status == 401 && basic.body.contains("invalid_token"))
            let get = try await Self.send(fixture, "/v1/ops/whoami", method: .GET, body: nil)
            #expect(get.status == 405 && get.headers["Allow"].first == "POST")
            let post = try await Self.send(fixture, "/healthz", body: nil)
            #expect(post.status == 405 && post.headers["Allow"].first == "GET, HEAD")
            // A path that does not exist is 404 with any method, never 405.
            for (path, method) in [("/nonexistent", HTTPMethod.POST), ("/v1/ops", .POST), ("/V1/ops/whoami", .DELETE)] {
                let missing = try await Self.send(fixture, path, method: method, body: nil)
                #expect(missing.status == 404 && missing.headers["Allow"].isEmpty, "\(method) \(path)")
            }
        }
    }

    @Test func everyAnswerCarriesItsRequestIdAndNoStore() async throws {
        try await ServerFixture.with { fixture in
            let root = ServerFixture.text(fixture.rootToken)
            let anonymous = try await Self.send(fixture, "/v1/ops/whoami")
            #expect(
                anonymous.status == 401 && anonymous.headers["WWW-Authenticate"].first == #"Bearer realm="backupctl""#)
            let answers = [anonymous, try await Self.send(fixture, "/healthz", method: .GET, body: nil)]
            for answer in answers {
                #expect(answer.headers["Cache-Control"].first == "no-store")
                // A made id: 12 random bytes as lowercase hex.
                let made = answer.headers["X-Request-Id"].first ?? ""
                #expect(made.count == 24 && made.allSatisfy { $0.isHexDigit && !$0.isUppercase }, "\(made)")
            }
            #expect(answers[0].headers["X-Request-Id"] != answers[1].headers["X-Request-Id"])
            // The caller's id is kept, and names the audit entry of what it did.
            let headers = [
                ("Content-Type", "application/json"), ("X-Request-Id", "ticket-4711.a"), (Wire.tenantHeader, "sandbox"),
            ]
            let shown = try await Self.send(fixture, "/v1/ops/stats", bearer: root, headers: headers)
            #expect(shown.status == 200 && shown.headers["X-Request-Id"].first == "ticket-4711.a", "\(shown.body)")
            let entries = try await fixture.audit().filter { $0.details["requestId"] == "ticket-4711.a" }
            #expect(entries.map(\.action) == ["backup.stats"], "\(entries)")
            // An id that is not a plain token is replaced, never echoed.
            let hostile = try await Self.send(
                fixture, "/healthz", method: .GET, headers: [("X-Request-Id", "a b;<c>")], body: nil)
            #expect(hostile.headers["X-Request-Id"].first?.count == 24)
            // So is a secret-shaped one (a token pasted in the wrong header): never logged, never
            // in the audit chain. A 32-digit trace id is kept.
            let tokenShaped = ServerFixture.text(fixture.rootToken)
            let pasted = try await Self.send(
                fixture, "/v1/ops/stats", bearer: root,
                headers: [
                    ("Content-Type", "application/json"), ("X-Request-Id", tokenShaped), (Wire.tenantHeader, "sandbox"),
                ])
            #expect(pasted.status == 200 && pasted.headers["X-Request-Id"].first?.count == 24)
            #expect(try await fixture.audit().allSatisfy { $0.details["requestId"] != tokenShaped })
            let doubled = try await Self.send(
                fixture, "/healthz", method: .GET, headers: [("X-Request-Id", String(repeating: "ab", count: 64))],
                body: nil)
            #expect(doubled.headers["X-Request-Id"].first?.count == 24, "128 hex digits: two keys written out")
            let trace = String(repeating: "4bf92f3577b34da6", count: 2)
            let traced = try await Self.send(
                fixture, "/healthz", method: .GET, headers: [("X-Request-Id", trace)], body: nil)
            #expect(traced.headers["X-Request-Id"].first == trace)
        }
    }

    @Test func aLimitedCredentialIsToldWhenToComeBack() async throws {
        try await ServerFixture.with { fixture in
            let stale = unknownToken("Q")
            for _ in 0..<5 {
                #expect(try await Self.send(fixture, "/v1/ops/whoami", bearer: stale).status == 401)
            }
            let limited = try await Self.send(fixture, "/v1/ops/whoami", bearer: stale)
            // The header says what the message says: the limiter's own wait, not a fixed window.
            let seconds = try #require(limited.headers["Retry-After"].first.flatMap { Int($0) })
            #expect(limited.status == 429 && (1...60).contains(seconds), "\(limited.headers)")
            #expect(limited.body.contains("retry in \(seconds) s"), "\(limited.body)")
            // A valid token at the same address is never limited by another's failures.
            let root = try await Self.send(fixture, "/v1/ops/whoami", bearer: ServerFixture.text(fixture.rootToken))
            #expect(root.status == 200)
            // No token at all is not a guess: 401 at once, never counted.
            #expect(try await Self.send(fixture, "/v1/ops/whoami").status == 401)
        }
    }
}
