import Foundation
import Testing

/// A client of `backupctl serve` — ours or a third party's — links the API's types and wire
/// format (`ConsoleInterface`, `ConsoleWire`) without a database driver or an HTTP server:
/// the package's own target graph says so.
@Suite struct LightClientTests {
    /// Each target's target and product dependencies, read from `Package.swift`.
    static func graph() throws -> [String: (targets: [String], products: [String])] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        var graph: [String: (targets: [String], products: [String])] = [:]
        // `.target(name: "X", dependencies: [ … ]` (also executable and test targets).
        let blocks =
            manifest.components(separatedBy: "Target(").dropFirst()
            + manifest.components(
                separatedBy: ".target("
            ).dropFirst()
        for block in blocks {
            guard let name = block.firstMatch(of: /name: "([A-Za-z0-9]+)"/)?.1,
                let open = block.range(of: "dependencies: [")
            else { continue }
            var depth = 1
            var index = open.upperBound
            while index < block.endIndex, depth > 0 {
                if block[index] == "[" { depth += 1 }
                if block[index] == "]" { depth -= 1 }
                index = block.index(after: index)
            }
            let list = block[open.upperBound..<index]
            let products = list.matches(of: /\.product\(name: "([A-Za-z0-9]+)"/).map { String($0.1) }
            let withoutProducts = list.replacing(/\.product\([^)]*\)/, with: "")
            let targets = withoutProducts.matches(of: /"([A-Za-z0-9]+)"/).map { String($0.1) }
            graph[String(name)] = (targets, products)
        }
        return graph
    }

    @Test func theClientLinksNoDatabaseDriverAndNoHTTPServer() throws {
        let graph = try Self.graph()
        #expect(graph["ConsoleClient"] != nil && graph["ConsoleInterface"] != nil)
        var seen: Set<String> = []
        var products: Set<String> = []
        var pending = ["ConsoleClient"]
        while let next = pending.popLast() {
            guard seen.insert(next).inserted, let node = graph[next] else { continue }
            products.formUnion(node.products)
            pending += node.targets
        }
        #expect(seen.contains("ConsoleInterface") && seen.contains("ConsoleWire"))
        for heavy in [
            "ConsoleService", "SQLiteStore", "PostgresStore", "ConsoleServer", "TurnkeySandbox", "SandboxHTTP",
        ] {
            #expect(!seen.contains(heavy), "ConsoleClient reaches \(heavy)")
        }
        for heavy in ["GRDB", "GRDBSQLite", "PostgresNIO", "Hummingbird", "HummingbirdCore"] {
            #expect(!products.contains(heavy), "ConsoleClient links \(heavy)")
        }
        // The walk sees the heavy dependencies where they are.
        #expect(graph["ConsoleService"]?.targets.contains("SQLiteStore") == true)
    }
}
