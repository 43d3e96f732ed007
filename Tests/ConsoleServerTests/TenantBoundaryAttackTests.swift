import Access
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A tenant admin reaching past its tenant through a real `backupctl serve`: outbound URLs that
/// would probe the server's own network (SSRF), and the operators a tenant admin must not
/// touch. Each case asserts the refusal and that the valid operator is still served within 1 s.
@Suite(.serialized) struct TenantBoundaryAttackTests {
    /// A listening socket on `host` that counts the connections it is offered and answers each
    /// with an HTTP 500 carrying `secret` (an internal service's error page).
    final class Listener: @unchecked Sendable {
        let socket: Int32
        let port: Int
        private let lock = NSLock()
        private var accepted = 0
        private var task: Task<Void, Never>?

        init(host: String = "127.0.0.1", secret: String) throws {
            let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr(host)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0, listen(fd, 16) == 0 else {
                close(fd)
                throw POSIXError(.EADDRINUSE)
            }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            socket = fd
            port = Int(UInt16(bigEndian: address.sin_port))
            let answer =
                "HTTP/1.1 500 Internal\r\nContent-Length: \(secret.utf8.count)\r\nConnection: close\r\n\r\n\(secret)"
            task = Task { [socket] in
                while !Task.isCancelled {
                    let client = accept(socket, nil, nil)
                    if client >= 0 {
                        self.lock.withLock { self.accepted += 1 }
                        try? await Task.sleep(nanoseconds: 50_000_000)
                        _ = answer.withCString { send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                        close(client)
                    } else {
                        try? await Task.sleep(nanoseconds: 10_000_000)
                    }
                }
                // The loop alone closes its listener: closed from `stop()`, its number could be
                // reused by another test's socket while the loop still accepts on it.
                close(socket)
            }
        }

        var connections: Int { lock.withLock { accepted } }

        func stop() {
            shutdown(socket, Int32(SHUT_RDWR))
            task?.cancel()
        }
    }

    /// A live tenant `live` (admin: root), made in the store as if it had passed its checks.
    static func addLiveTenant(_ server: AttackServer) async throws {
        let root = try await server.setup.access.authenticate(token: server.setup.rootToken)
        try await server.setup.access.createTenant(
            TenantRecord(
                name: try TenantName("live"), isSandbox: false, turnkeyURL: "https://api.turnkey.com",
                turnkeyOrgId: "org", createdAt: 1),
            by: root)
    }

    @Test func backupServiceURLsCannotProbeTheServersNetwork() async throws {
        let listener = try Listener(secret: "INTERNAL-SECRET-42")
        defer { listener.stop() }
        try await AttackServer.with { server in
            try await Self.addLiveTenant(server)
            func update(_ url: String) async throws -> ChildResult {
                try await server.client(["--format", "json", "tenant", "update", "live", "--backup-service-url", url])
            }
            // An HTTP port, a closed port and the server's own port: the same refusal, no contact.
            let open = try await update("http://127.0.0.1:\(listener.port)")
            let closed = try await update("http://127.0.0.1:1")
            let own = try await update("http://127.0.0.1:\(server.port)")
            for result in [open, closed, own] {
                #expect(result.status == 1 && result.stderr.contains("private_target"), "\(result.stderr)")
            }
            #expect(open.stderr == closed.stderr && closed.stderr == own.stderr)
            // Private, link-local, loopback by name and IPv6, a path prefix, credentials.
            let refused: [(String, String)] = [
                ("https://10.1.2.3", "private_target"), ("https://169.254.169.254", "private_target"),
                ("https://192.168.1.1:8443", "private_target"), ("https://localhost:8443", "private_target"),
                ("https://[::1]:8443", "private_target"), ("https://[fe80::1]:8443", "private_target"),
                ("https://[::ffff:127.0.0.1]:8443", "private_target"), ("http://10.1.2.3", "invalid_url"),
                ("https://backup.example.com/x", "invalid_url"), ("https://u:p@backup.example.com", "invalid_url"),
            ]
            for (url, code) in refused {
                let result = try await update(url)
                // A malformed URL is a configuration mistake (78); a refused target a failure (1).
                let status: Int32 = code == "invalid_url" ? 78 : 1
                #expect(result.status == status && result.stderr.contains(code), "\(url): \(result.stderr)")
                #expect(!result.stderr.contains("u:p@"), "a credential in a URL is never repeated")
                #expect(await server.servesOperator(within: 1))
            }
            #expect(listener.connections == 0)
            // The tenant still has no URL: nothing was saved.
            let tenants = try await server.client(["--format", "json", "tenant", "list"])
            #expect(!tenants.stdout.contains("127.0.0.1") && !tenants.stdout.contains("169.254"), "\(tenants.stdout)")
        }
    }

    @Test func anAllowedPrivateHostIsCalledButWhatItAnswersIsNeverEchoed() async throws {
        let listener = try Listener(host: "127.0.0.2", secret: "INTERNAL-SECRET-42")
        defer { listener.stop() }
        try await AttackServer.with(["--allow-private-host", "127.0.0.2"]) { server in
            try await Self.addLiveTenant(server)
            let result = try await server.client([
                "--format", "json", "tenant", "update", "live", "--backup-service-url",
                "http://127.0.0.2:\(listener.port)",
            ])
            // Allowed by name, so it was called; it failed its health check; its body is not shown.
            #expect(listener.connections >= 1)
            #expect(result.status == 2, "\(result.stderr)")
            #expect(!result.stderr.contains("INTERNAL-SECRET"), "\(result.stderr)")
            // http is for loopback only: 127.0.0.2 is loopback, so allowed; 10.x is not.
            #expect(await server.servesOperator(within: 1))
        }
    }

    @Test func aTenantAdminCannotTouchAGlobalOperatorOrLeaveItsTenantWithoutAnAdmin() async throws {
        try await AttackServer.with { server in
            // ada: admin of sandbox only.
            let added = try await server.client([
                "--format", "json", "operator", "add", "ada", "--tenant", "sandbox", "--role", "admin",
            ])
            #expect(added.status == 0, "\(added.stderr)")
            let ada = try #require(
                (try? JSONSerialization.jsonObject(with: Data(added.stdout.utf8)) as? [String: Any])?["token"]
                    as? String)
            for command in [
                ["operator", "revoke", "root", "--tenant", "sandbox"],
                ["operator", "grant", "root", "--tenant", "sandbox", "--role", "viewer"],
                ["operator", "token", "rotate", "root"], ["--yes", "operator", "remove", "root"],
                ["operator", "grant", "ada", "--right", "tenants:create"],
                ["tenant", "create", "mine", "--sandbox"],
            ] {
                let result = try await server.client(["--format", "json", "--tenant", "sandbox"] + command, token: ada)
                #expect(
                    result.status == 77 && result.stderr.contains("permission_denied"), "\(command): \(result.stderr)")
                #expect(await server.servesOperator(within: 1))
            }
            // Root still has its role in sandbox and may still create tenants.
            let whoami = try await server.client(["--format", "json", "--tenant", "sandbox", "whoami"])
            #expect(whoami.stdout.contains(#""role":"admin""#) && whoami.stdout.contains(#""canCreateTenants":true"#))
            // The global right is granted by a holder; then ada creates a tenant and is its only
            // admin, and cannot revoke itself there, nor be demoted.
            let granted = try await server.client(["operator", "grant", "ada", "--right", "tenants:create"])
            #expect(granted.status == 0, "\(granted.stderr)")
            let created = try await server.client(["tenant", "create", "gamma", "--sandbox"], token: ada)
            #expect(created.status == 0, "\(created.stderr)")
            for command in [
                ["operator", "revoke", "ada", "--tenant", "gamma"],
                ["operator", "grant", "ada", "--tenant", "gamma", "--role", "viewer"],
            ] {
                let result = try await server.client(["--format", "json"] + command, token: ada)
                #expect(result.status == 1 && result.stderr.contains("last_admin"), "\(command): \(result.stderr)")
            }
            // The right's last holder keeps it; a holder may take it from another.
            #expect(try await server.client(["operator", "revoke", "ada", "--right", "tenants:create"]).status == 0)
            let last = try await server.client([
                "--format", "json", "operator", "revoke", "root", "--right", "tenants:create",
            ])
            #expect(last.status == 1 && last.stderr.contains("last_tenant_creator"), "\(last.stderr)")
            let audit = try await server.audit()
            #expect(audit.contains { $0.action == "operator.grant_right" && $0.target == "ada" })
            #expect(audit.contains { $0.action == "operator.revoke_right" && $0.target == "ada" })
            #expect(await server.servesOperator(within: 1))
        }
    }
}
