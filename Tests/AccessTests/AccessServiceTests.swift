import Access
import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Testing

@Suite struct AccessServiceTests {
    @Test(arguments: TestBackend.available) func bootstrapCreatesAdminSandboxAndRefusesTwice(backend: TestBackend)
        async throws
    {
        let fixture = try await TempStore(backend)
        let access = fixture.access()
        let token = try await access.bootstrap(admin: try OperatorName("root"))
        let text = token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        #expect(text.hasPrefix("bctl_") && text.count == 48)
        #expect(!"\(token)".contains(text))

        let op = try await access.authenticate(token: token)
        #expect(op.name.rawValue == "root" && op.canCreateTenants)
        let session = try await access.session(operator: op, tenant: try TenantName("sandbox"))
        #expect(session.role == .admin && session.tenant.isSandbox)

        await #expect(throws: ConsoleError.self) { try await access.bootstrap(admin: try OperatorName("again")) }
        #expect(try await fixture.store.operatorCount() == 1)
    }

    @Test func tokensAreStoredOnlyAsHashes() async throws {
        let fixture = try TempStore()
        let token = try await fixture.access().bootstrap(admin: try OperatorName("root"))
        let text = token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: fixture.path))
        let wal = (try? Data(contentsOf: URL(fileURLWithPath: fixture.path + "-wal"))) ?? Data()
        #expect(bytes.range(of: Data(text.utf8)) == nil)
        #expect(wal.range(of: Data(text.utf8)) == nil)
        #expect(try await fixture.store.operatorRecord(tokenHash: OperatorToken.hash(token)) != nil)
    }

    @Test(arguments: TestBackend.available) func unknownTokenIsDenied(backend: TestBackend) async throws {
        let fixture = try await TempStore(backend)
        _ = try await fixture.bootstrap()
        let stranger = OperatorToken.generate(using: SeededRandom(seed: 99))
        let error = await #expect(throws: ConsoleError.self) {
            try await fixture.access().authenticate(token: stranger)
        }
        #expect(error?.kind == .permissionDenied && error?.code == "invalid_token")
    }

    @Test(arguments: ["", "bctl_short", "xxxx_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"])
    func malformedTokensAreRejected(_ text: String) {
        #expect(throws: ConsoleError.self) { try OperatorToken.parse(Array(text.utf8)) }
    }

    @Test func tokenParsingTrimsNewline() throws {
        let token = OperatorToken.generate(using: SeededRandom(seed: 1))
        let text = token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        let parsed = try OperatorToken.parse(Array((text + "\n").utf8))
        #expect(parsed == token)
        // In place (a header's UTF-8) and from a copy (bytes that are not contiguous) alike.
        let padded = " \t" + text + " \r\n"
        #expect(try OperatorToken.parse(padded.utf8) == token)
        #expect(try OperatorToken.parse(padded.utf8.lazy.map { $0 }) == token)
        #expect(try OperatorToken.parse(padded.utf8.dropFirst(2)) == token)
        for bad in ["\n" + text, text + "x", " " + String(text.dropLast())] {
            #expect(throws: ConsoleError.self) { try OperatorToken.parse(bad.utf8) }
            #expect(throws: ConsoleError.self) { try OperatorToken.parse(bad.utf8.lazy.map { $0 }) }
        }
    }

    @Test(arguments: TestBackend.available) func grantsAreScopedToTheirTenant(backend: TestBackend) async throws {
        let fixture = try await TempStore(backend)
        let (root, rootSandbox) = try await fixture.bootstrap()
        let access = fixture.access(seed: 8)
        try await access.createTenant(
            TenantRecord(name: try TenantName("other"), isSandbox: true, createdAt: 1), by: root)
        let aliceToken = try await access.addOperator(try OperatorName("alice"), role: .support, session: rootSandbox)
        let alice = try await access.authenticate(token: aliceToken)

        #expect(try await access.session(operator: alice, tenant: try TenantName("sandbox")).role == .support)
        let denied = await #expect(throws: ConsoleError.self) {
            try await access.session(operator: alice, tenant: try TenantName("other"))
        }
        #expect(denied?.kind == .permissionDenied)
        // An unknown tenant looks the same as one without a grant: names do not leak.
        let unknown = await #expect(throws: ConsoleError.self) {
            try await access.session(operator: alice, tenant: try TenantName("nope"))
        }
        #expect(unknown?.code == denied?.code)
        #expect(try await access.tenants(visibleTo: alice).map(\.0.name.rawValue) == ["sandbox"])
    }

    @Test(arguments: TestBackend.available) func nonAdminCannotManageOperatorsAndNothingChanges(backend: TestBackend)
        async throws
    {
        let fixture = try await TempStore(backend)
        let (_, rootSandbox) = try await fixture.bootstrap()
        let access = fixture.access(seed: 9)
        let bobToken = try await access.addOperator(try OperatorName("bob"), role: .cleaner, session: rootSandbox)
        let bob = try await access.session(
            operator: try await access.authenticate(token: bobToken), tenant: try TenantName("sandbox"))
        let auditBefore = try await fixture.store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000).count

        let error = await #expect(throws: ConsoleError.self) {
            try await access.addOperator(try OperatorName("mallory"), role: .admin, session: bob)
        }
        #expect(error?.kind == .permissionDenied)
        await #expect(throws: ConsoleError.self) {
            try await access.grant(try OperatorName("bob"), role: .admin, session: bob)
        }
        #expect(try await fixture.store.operatorRecord(named: try OperatorName("mallory")) == nil)
        // The refusals are audited as such, and nothing else is written.
        let added = try await fixture.store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000).dropFirst(auditBefore)
        #expect(added.map(\.action) == ["access.denied", "access.denied"])
        #expect(added.allSatisfy { $0.details["code"] == "permission_denied" })
        await #expect(throws: ConsoleError.self) {
            try await access.createTenant(
                TenantRecord(name: try TenantName("x"), isSandbox: true, createdAt: 1),
                by: try await access.authenticate(token: bobToken))
        }
    }

    @Test(arguments: TestBackend.available) func grantRevokeAndList(backend: TestBackend) async throws {
        let fixture = try await TempStore(backend)
        let (_, rootSandbox) = try await fixture.bootstrap()
        let access = fixture.access(seed: 10)
        _ = try await access.addOperator(try OperatorName("carol"), role: .viewer, session: rootSandbox)
        try await access.grant(try OperatorName("carol"), role: .cleaner, session: rootSandbox)
        #expect(
            try await access.operators(session: rootSandbox).map { "\($0.operatorName)=\($0.role)" } == [
                "carol=cleaner", "root=admin",
            ])
        try await access.revoke(try OperatorName("carol"), session: rootSandbox)
        #expect(try await access.operators(session: rootSandbox).count == 1)
        let again = await #expect(throws: ConsoleError.self) {
            try await access.revoke(try OperatorName("carol"), session: rootSandbox)
        }
        #expect(again?.kind == .notFound)
        await #expect(throws: ConsoleError.self) {
            try await access.addOperator(try OperatorName("carol"), role: .viewer, session: rootSandbox)
        }
    }
}

@Suite struct RoleMatrixTests {
    static let cases: [(Role, Permission)] = Role.allCases.flatMap { role in Permission.allCases.map { (role, $0) } }

    @Test(arguments: cases)
    func roleAllowsExactlyWhatTheMatrixSays(_ role: Role, _ permission: Permission) async throws {
        let fixture = try TempStore()
        let (root, rootSandbox) = try await fixture.bootstrap()
        let access = fixture.access(seed: 11)
        let token = try await access.addOperator(try OperatorName("op"), role: role, session: rootSandbox)
        _ = root
        let session = try await access.session(
            operator: try await access.authenticate(token: token), tenant: try TenantName("sandbox"))
        if role >= permission.minimumRole {
            try await session.require(permission)
        } else {
            let error = await #expect(throws: ConsoleError.self) { try await session.require(permission) }
            #expect(error?.kind == .permissionDenied && error?.code == "permission_denied")
        }
    }

    @Test func rolesAreCumulative() {
        #expect(Role.viewer < .support && Role.support < .cleaner && Role.cleaner < .admin)
        #expect(Permission.lookup.minimumRole == .viewer)
        #expect(Permission.resetComplete.minimumRole == .support)
        #expect(Permission.cleanupRun.minimumRole == .cleaner)
        #expect(Permission.auditVerify.minimumRole == .admin)
    }
}
