import BackupModel
import ConsoleService
import Foundation
import Testing

/// The rules of a tenant's outbound URLs and of a server's import paths, without a server.
@Suite struct OutboundTargetTests {
    @Test(arguments: [
        ("127.0.0.1", NetworkAddress.Scope.loopback), ("127.200.1.1", .loopback), ("::1", .loopback),
        ("[::1]", .loopback), ("10.1.2.3", .privateNetwork), ("172.16.0.1", .privateNetwork),
        ("172.31.255.255", .privateNetwork), ("172.32.0.1", .global), ("192.168.0.1", .privateNetwork),
        ("100.64.0.1", .privateNetwork), ("169.254.169.254", .linkLocal), ("fe80::1", .linkLocal),
        ("fd00::1", .privateNetwork), ("::ffff:10.0.0.1", .privateNetwork), ("::ffff:127.0.0.1", .loopback),
        ("64:ff9b::a9fe:a9fe", .linkLocal), ("0.0.0.0", .reserved), ("::", .reserved), ("224.0.0.1", .reserved),
        ("255.255.255.255", .reserved), ("8.8.8.8", .global), ("2001:4860:4860::8888", .global),
    ])
    func scopes(address: String, scope: NetworkAddress.Scope) {
        #expect(NetworkAddress.scope(of: address) == scope)
    }

    @Test func notAnAddressHasNoScope() {
        for text in ["localhost", "example.com", "10.1.2", "1.2.3.4.5", "::g", ""] {
            #expect(NetworkAddress.scope(of: text) == nil, "\(text)")
        }
        #expect(NetworkAddress.isLoopback(host: "localhost") && NetworkAddress.isLoopback(host: "a.localhost"))
        #expect(!NetworkAddress.isLoopback(host: "localhost.example.com"))
    }

    @Test func urlsHaveOneShapeEverywhere() throws {
        for policy in [nil, ServerPolicy()] {
            for bad in [
                "ftp://x.example", "https://u:p@x.example", "https://x.example/prefix", "https://x.example?q=1",
                "https://x.example#f", "http://10.1.2.3", "http://x.example", "https://", "x.example",
            ] {
                #expect(throws: ConsoleError.self, "\(bad)") {
                    _ = try OutboundTarget.check(bad, option: "--backup-service-url", policy: policy)
                }
            }
        }
        #expect(try OutboundTarget.check("HTTPS://8.8.8.8:8443/", option: "-", policy: nil) == "https://8.8.8.8:8443")
        // In-process (the operator's own machine): private and loopback targets are the operator's to call.
        #expect(try OutboundTarget.check("http://127.0.0.1:9", option: "-", policy: nil) == "http://127.0.0.1:9")
        #expect(try OutboundTarget.check("https://10.1.2.3", option: "-", policy: nil) == "https://10.1.2.3")
    }

    @Test func aServerCallsNoPrivateTargetUnlessAllowedByName() throws {
        let server = ServerPolicy()
        for target in [
            "http://127.0.0.1:9", "https://10.1.2.3", "https://169.254.169.254", "https://[::1]:1",
            "https://localhost:1",
            "https://[fe80::1]", "https://0.0.0.0",
        ] {
            do {
                _ = try OutboundTarget.check(target, option: "--backup-service-url", policy: server)
                Issue.record("\(target) was allowed")
            } catch {
                #expect(error.code == "private_target" && error.message.contains("--allow-private-host"), "\(target)")
            }
        }
        #expect(try OutboundTarget.check("https://8.8.8.8", option: "-", policy: server) == "https://8.8.8.8")
        let allowing = ServerPolicy(allowedPrivateHosts: ["127.0.0.1", "Internal.Example"])
        #expect(try OutboundTarget.check("http://127.0.0.1:9", option: "-", policy: allowing) == "http://127.0.0.1:9")
        _ = try OutboundTarget.check("https://internal.example", option: "-", policy: allowing)
        #expect(throws: ConsoleError.self) {
            try OutboundTarget.check("https://10.0.0.1", option: "-", policy: allowing)
        }
    }

    /// A job's output (`sandbox simulate --out`) on a server: below the tenant's directory, the
    /// directory itself new or already there, never through `..`, a link or another tenant.
    @Test func outputPathsStayBelowTheTenantsDirectory() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let fm = FileManager.default
        try fm.createDirectory(at: root.appendingPathComponent("a/x"), withIntermediateDirectories: true)
        try fm.createDirectory(at: root.appendingPathComponent("b/theirs"), withIntermediateDirectories: true)
        try fm.createSymbolicLink(atPath: root.appendingPathComponent("a/out").path, withDestinationPath: "/tmp")
        try fm.createSymbolicLink(
            atPath: root.appendingPathComponent("a/next").path,
            withDestinationPath: root.appendingPathComponent("b").path)
        let policy = ServerPolicy(importRoot: root.path)
        let tenant = try TenantName("a")
        let real = try #require(realpath(root.path, nil).map { String(cString: $0) })
        #expect(try policy.outputDirectory("sim", tenant: tenant) == real + "/a/sim")
        #expect(try policy.outputDirectory("x/sim/", tenant: tenant) == real + "/a/x/sim")
        #expect(try policy.outputDirectory("x", tenant: tenant) == real + "/a/x")
        #expect(try policy.outputDirectory(root.path + "/a/new", tenant: tenant) == real + "/a/new")
        for path in [
            "/tmp/victim", "../b/sim", "x/../../b", "out", "out/sim", "next/theirs", root.path + "/b/theirs", "..",
            "nope/sim", "", "/", "x\ny",
        ] {
            do {
                _ = try policy.outputDirectory(path, tenant: tenant)
                Issue.record("\(path) was allowed")
            } catch {
                #expect(error.code == "invalid_output_path", "\(path): \(error.code)")
            }
        }
        do {
            _ = try ServerPolicy().outputDirectory("sim", tenant: tenant)
            Issue.record("a server without a root took an output path")
        } catch {
            #expect(error.code == "imports_disabled" && error.kind == .permissionDenied)
        }
    }

    @Test func importPathsStayBelowTheTenantsDirectory() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("roots-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let fm = FileManager.default
        try fm.createDirectory(at: root.appendingPathComponent("a/x/y"), withIntermediateDirectories: true)
        try fm.createDirectory(at: root.appendingPathComponent("b/theirs"), withIntermediateDirectories: true)
        try fm.createSymbolicLink(atPath: root.appendingPathComponent("a/out").path, withDestinationPath: "/")
        try fm.createSymbolicLink(atPath: root.appendingPathComponent("a/in").path, withDestinationPath: "x/y")
        let policy = ServerPolicy(importRoot: root.path)
        let tenant = try TenantName("a")
        let real = try #require(realpath(root.path, nil).map { String(cString: $0) })
        #expect(try policy.importDirectory("x", tenant: tenant) == real + "/a/x")
        #expect(try policy.importDirectory("in", tenant: tenant) == real + "/a/x/y")
        #expect(try policy.importDirectory(root.path + "/a/x/y", tenant: tenant) == real + "/a/x/y")
        for (path, code) in [
            ("../b/theirs", "invalid_import_path"), ("x/../../b", "invalid_import_path"), ("/", "invalid_import_path"),
            (root.path + "/b/theirs", "invalid_import_path"), ("out", "invalid_import_path"),
            ("out/etc", "invalid_import_path"), ("nope", "invalid_directory"), ("x\ny", "invalid_import_path"),
            ("", "invalid_import_path"),
        ] {
            do {
                _ = try policy.importDirectory(path, tenant: tenant)
                Issue.record("\(path) was allowed")
            } catch {
                #expect(error.code == code, "\(path): \(error.code)")
            }
        }
        #expect(throws: ConsoleError.self) { try policy.importDirectory("x", tenant: try TenantName("c")) }
        do {
            _ = try ServerPolicy().importDirectory("x", tenant: tenant)
            Issue.record("a server without a root took an import")
        } catch {
            #expect(error.code == "imports_disabled" && error.kind == .permissionDenied)
        }
    }
}
