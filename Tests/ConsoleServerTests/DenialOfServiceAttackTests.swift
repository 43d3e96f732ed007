import Foundation
import Testing

/// Attacks on a real `backupctl serve` by clients without a valid token (and one viewer), each
/// asserting the refusal and that the valid operator is still served within 1 s. Attackers
/// play from loopback addresses other than 127.0.0.1 where the address matters; the operator
/// is always at 127.0.0.1. Every loop is bounded in rounds, every wait in time.
@Suite(.serialized) struct DenialOfServiceAttackTests {
    static let partialHead = "POST /v1/ops/whoami HTTP/1.1\r\nHost: x\r\n"

    /// A well-formed token nobody has, different every time.
    static func inventedToken() -> String {
        "bctl_" + UUID().uuidString.replacingOccurrences(of: "-", with: "") + "AAAAAAAAAAA"
    }

    /// Polls until every connection was closed by the server, at most `seconds`.
    static func allClosed(_ connections: [RawConnection], within seconds: Double) async -> Bool {
        await eventually(seconds: seconds) { connections.allSatisfy { $0.isClosedByPeer() } }
    }

    @Test func slowHeadersAreCutOffAtTheHeaderTimeoutWhileTheOperatorIsServed() async throws {
        try await AttackServer.with(["--header-timeout", "1"], environment: ["BACKUPCTL_LOG_LEVEL": "info"]) { server in
            let slow = try (0..<8).map { _ in try RawConnection(port: server.port, from: "127.0.0.2") }
            for connection in slow { connection.send(Self.partialHead) }
            // One more header byte from each every 100 ms, for at most 10 s: the head never
            // ends, and a trickle does not buy more time.
            var rounds = 0
            while rounds < 100, !slow.allSatisfy({ $0.isClosedByPeer() }) {
                for connection in slow { connection.send("X") }
                if rounds % 5 == 0 { #expect(await server.servesOperator(within: 1)) }
                rounds += 1
                try await Task.sleep(nanoseconds: 100_000_000)
            }
            #expect(slow.allSatisfy { $0.isClosedByPeer() }, "the trickling connections were never cut off")
            // A silent connection (connected, nothing sent) is cut off as well.
            let silent = try RawConnection(port: server.port, from: "127.0.0.2")
            #expect(await Self.allClosed([silent], within: 10))
            #expect(await server.servesOperator(within: 1))
            // What the guard closed shows in /metrics.
            let metrics = try await server.ask("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(
                metrics?.body.contains(#"backupctl_connections_closed_total{reason="header_timeout"} 9"#) == true,
                "\(metrics?.body ?? "")")
            // And in the log (at info), each with its reason and address.
            let closings = server.server.stderr.split(separator: "\n").filter { $0.contains("closed a connection") }
            #expect(closings.count == 9, "\(server.server.stderr)")
            #expect(closings.allSatisfy { $0.contains("reason=header_timeout") && $0.contains("address=127.0.0.2") })
        }
    }

    @Test func aBodyWithoutATokenIsNeverReadAndItsConnectionCloses() async throws {
        try await AttackServer.with(["--body-timeout", "2", "--max-connections-per-address", "8"]) { server in
            // Twice the address's cap of would-be slow bodies, none with a token.
            var refused = 0
            for _ in 0..<16 {
                let connection = try RawConnection(port: server.port, from: "127.0.0.3")
                connection.send(
                    "POST /v1/ops/whoami HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n{")
                if let answer = await connection.answer(within: 5000), answer.status == 401 {
                    #expect(answer.headers["connection"] == "close")
                    refused += 1
                }
                // Answered at once, and closed without waiting for the body.
                #expect(await Self.allClosed([connection], within: 5))
            }
            #expect(refused == 16)
            #expect(await server.servesOperator(within: 1))
        }
    }

    @Test func aSlowBodyWithAValidTokenIsCutOffAtTheBodyTimeout() async throws {
        try await AttackServer.with(["--body-timeout", "1"]) { server in
            let connection = try RawConnection(port: server.port, from: "127.0.0.4")
            connection.send(
                "POST /v1/ops/whoami HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(server.rootToken)\r\n"
                    + "Content-Length: 1000000\r\n\r\n{")
            var rounds = 0
            while rounds < 100, !connection.isClosedByPeer() {
                connection.send(" ")
                rounds += 1
                try await Task.sleep(nanoseconds: 100_000_000)
            }
            #expect(connection.isClosedByPeer(), "a body trickled for 10 s was never cut off")
            #expect(await server.servesOperator(within: 1))
        }
    }

    /// Clients without a token that keep every slot busy: each pipelines requests for the
    /// OpenAPI document and never reads, so the server is forever writing an answer (its write
    /// deadline is 30 s). Such a connection is evicted for the operator's.
    @Test func busyConnectionsWithoutATokenMakeRoomForTheOperator() async throws {
        let cap = 4
        try await AttackServer.with(["--max-connections", "\(cap)", "--max-connections-per-address", "\(cap)"]) {
            server in
            let request = "GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n"
            let pipelined = String(repeating: request, count: 400)
            var busy: [RawConnection] = []
            for host in 2...(cap + 1) {
                let connection = try RawConnection(port: server.port, from: "127.0.2.\(host)")
                connection.send(pipelined)
                // Its answers have begun: the server is writing to it (and will be, unread).
                #expect(!(await connection.receive(within: 10_000)).isEmpty)
                busy.append(connection)
            }
            #expect(await server.servesOperator(within: 1))
            // Again, now that a connection of theirs was evicted for the first.
            #expect(await server.servesOperator(within: 1))
            let evicted = busy.filter { $0.isClosedByPeer() }.count
            #expect((1...2).contains(evicted), "\(evicted) of the busy connections were closed")
        }
    }

    /// An HTTP/1.0 request without keep-alive ends its connection with its answer (which says
    /// so): neither the client reading to the end of the stream nor the slot waits for the idle
    /// timeout. One that asks for keep-alive keeps it.
    @Test func anHTTP10RequestEndsItsConnection() async throws {
        try await AttackServer.with([]) { server in
            let once = try RawConnection(port: server.port, from: "127.0.0.6")
            once.send("GET /healthz HTTP/1.0\r\n\r\n")
            let answer = await once.answer(within: 10_000)
            #expect(answer?.status == 200 && answer?.headers["connection"] == "close", "\(String(describing: answer))")
            #expect(await Self.allClosed([once], within: 10))
            let kept = try RawConnection(port: server.port, from: "127.0.0.6")
            kept.send("GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            #expect(await kept.answer(within: 10_000)?.status == 200)
            kept.send("GET /healthz HTTP/1.0\r\n\r\n")
            #expect(await kept.answer(within: 10_000)?.status == 200)
            #expect(await Self.allClosed([kept], within: 10))
            // Pipelined: only the answer to the request that ends the connection says so.
            let both = try RawConnection(port: server.port, from: "127.0.0.6")
            both.send(
                "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let first = await both.answer(within: 10_000)
            #expect(first?.status == 200 && first?.headers["connection"] == nil, "\(String(describing: first))")
            #expect(await Self.allClosed([both], within: 10))
        }
    }

    @Test func connectionFloodsStayWithinTheCapsAndTheOperatorGetsIn() async throws {
        let perAddress = 4
        let cap = 16
        try await AttackServer.with([
            "--max-connections", "\(cap)", "--max-connections-per-address", "\(perAddress)", "--header-timeout", "30",
        ]) { server in
            // Eight addresses, eight connections each, every one holding a half-sent head: four
            // times the server's cap, twice each address's.
            var flood: [String: [RawConnection]] = [:]
            for host in 2...9 {
                let address = "127.0.1.\(host)"
                flood[address] = try (0..<8).map { _ in
                    let connection = try RawConnection(port: server.port, from: address)
                    connection.send(Self.partialHead)
                    return connection
                }
            }
            #expect(await server.servesOperator(within: 1))
            // The server takes every connection in and closes those past the caps (the oldest
            // unfinished heads first): within a bounded wait, what is left open fits them.
            let fits = await eventually(seconds: 10) {
                let open = flood.mapValues { $0.filter { !$0.isClosedByPeer() }.count }
                return open.values.allSatisfy { $0 <= perAddress } && open.values.reduce(0, +) <= cap
            }
            #expect(fits)
            // A second wave while the first still holds its slots: the operator still gets in.
            let wave = try (0..<32).map { _ in
                let connection = try RawConnection(port: server.port, from: "127.0.2.1")
                connection.send(Self.partialHead)
                return connection
            }
            #expect(await server.servesOperator(within: 1))
            #expect(await eventually(seconds: 10) { wave.filter { !$0.isClosedByPeer() }.count <= perAddress })
            for connection in flood.values.joined() + wave { connection.close() }
        }
    }

    /// The budgets' window is a day here, so that what the test counts does not depend on how
    /// fast the machine runs it (a minute's budget earns a try back every 2 s).
    static let dayWindow = ["--limit-window", "86400"]

    @Test func badTokenFloodsAreLimitedWhileAValidOperatorAtTheSameAddressKeepsWorking() async throws {
        try await AttackServer.with(Self.dayWindow) { server in
            // One stale token repeated (a cron job) and a stream of invented ones, from the
            // operator's own address: each limited, never the operator.
            let connection = try RawConnection(port: server.port)
            var statuses: [Int: Int] = [:]
            for index in 0..<160 {
                connection.send(
                    AttackServer.request("whoami", bearer: index % 4 == 0 ? unknownToken("S") : Self.inventedToken()))
                let answer = try #require(await connection.answer(within: 10_000))
                statuses[answer.status, default: 0] += 1
                if answer.status == 429 { #expect(Int(answer.headers["retry-after"] ?? "") ?? 0 >= 1) }
                if index % 20 == 0 { #expect(await server.servesOperator(within: 1)) }
            }
            #expect(Set(statuses.keys).isSubset(of: [401, 429]), "\(statuses)")
            // The address's 30 failures a window (5 of them the stale token's), then 429.
            let first = statuses[401] ?? 0
            #expect(first == 30, "\(statuses)")
            #expect(await server.servesOperator(within: 1))
            // Forty other addresses guessing ten times each: past the server's 300 a minute
            // (less what was used above) they are refused too.
            var unauthorized = 0
            for host in 1...40 {
                let guesser = try RawConnection(port: server.port, from: "127.0.3.\(host)")
                for _ in 0..<10 {
                    guesser.send(AttackServer.request("whoami", bearer: Self.inventedToken()))
                    let answer = try #require(await guesser.answer(within: 10_000))
                    if answer.status == 401 { unauthorized += 1 }
                }
                guesser.close()
            }
            #expect(unauthorized == 300 - 30, "\(unauthorized) of 400")
            #expect(await server.servesOperator(within: 1))
            // Each failure counted is one audit entry; refusals are one per limited key and minute.
            let failed = try await server.audit().filter { $0.action == "auth.failed" }
            let counted = failed.filter { $0.details["code"] == "invalid_token" }.count
            #expect(counted == first + unauthorized)
            #expect(failed.count - counted <= 3 + 40, "\(failed.count - counted) rate_limited entries")
        }
    }

    @Test func aViewerCannotFloodTheAuditWithRefusals() async throws {
        try await AttackServer.with(Self.dayWindow) { server in
            let connection = try RawConnection(port: server.port, from: "127.0.0.5")
            var statuses: [Int: Int] = [:]
            for index in 0..<300 {
                connection.send(AttackServer.request("stats", bearer: server.bobToken, tenant: "beta"))
                let answer = try #require(await connection.answer(within: 10_000))
                statuses[answer.status, default: 0] += 1
                if index % 50 == 0 { #expect(await server.servesOperator(within: 1)) }
            }
            // 30 refusals a window, then 429.
            let refused = statuses[403] ?? 0
            #expect(refused == 30 && statuses[429] == 270, "\(statuses)")
            let audit = try await server.audit()
            #expect(audit.filter { $0.action == "access.denied" && $0.operatorName == "bob" }.count == refused)
            #expect(audit.filter { $0.action == "rate.limited" && $0.operatorName == "bob" }.count == 1)
            #expect(await server.servesOperator(within: 1))
        }
    }
}
