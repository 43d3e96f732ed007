import Foundation
import Testing

@testable import BackupModel

@Suite("TenantName, OperatorName, Role")
struct NamesAndRolesTests {
    @Test("valid tenant names", arguments: ["a", "prod", "eu-west-1", "sandbox-2", String(repeating: "x", count: 32)])
    func validTenant(name: String) throws {
        #expect(try TenantName(name).rawValue == name)
    }

    @Test(
        "invalid tenant names",
        arguments: ["", "Prod", "1prod", "-prod", "pro_d", "pro.d", "pro d", "é", String(repeating: "x", count: 33)])
    func invalidTenant(name: String) {
        #expect(throws: ConsoleError.self) { try TenantName(name) }
        do { _ = try TenantName(name) } catch { #expect(error.code == "invalid_tenant_name") }
    }

    @Test("operator names allow . and _")
    func operatorNames() throws {
        #expect(try OperatorName("alice.b_c-1").rawValue == "alice.b_c-1")
        for bad in ["", "Alice", "_alice", "al ice", String(repeating: "a", count: 65)] {
            #expect(throws: ConsoleError.self) { try OperatorName(bad) }
        }
    }

    @Test("names decode with validation")
    func decoding() throws {
        #expect(try JSONDecoder().decode([TenantName].self, from: Data(#"["prod"]"#.utf8)) == [try TenantName("prod")])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([TenantName].self, from: Data(#"["PROD"]"#.utf8))
        }
    }

    @Test("roles parse by name, case-insensitively, and are cumulative")
    func roles() throws {
        #expect(try Role(name: "viewer") == .viewer)
        #expect(try Role(name: "ADMIN") == .admin)
        #expect(Role.viewer < .support && Role.support < .cleaner && Role.cleaner < .admin)
        #expect(Role.allCases.map(\.name) == ["viewer", "support", "cleaner", "admin"])
        #expect("\(Role.cleaner)" == "cleaner")
        do {
            _ = try Role(name: "root")
            Issue.record("accepted root")
        } catch {
            #expect(error.code == "invalid_role")
            #expect(error.message.contains("viewer, support, cleaner or admin"))
        }
    }

    @Test("ConsoleError adds context without changing kind or code")
    func errorContext() {
        let error = ConsoleError.invalid("invalid_x", "Bad x.").context("while importing b1")
        #expect(error.code == "invalid_x")
        #expect(error.kind == .invalidInput)
        #expect(error.message == "while importing b1: Bad x.")
        #expect(ConsoleError.notFound("gone").code == "not_found")
    }
}
