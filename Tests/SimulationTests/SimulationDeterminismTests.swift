import BackupModel
import BackupctlTestSupport
import Foundation
import Simulation
import Testing

/// Same seed, same world: in-process runs are byte for byte the same; another seed is another
/// world. The command runs them too, and refuses bad options with one line.
@Suite(.timeLimit(.minutes(10))) struct SimulationDeterminismTests {
    static func temporary() -> String {
        let path = NSTemporaryDirectory() + "sim-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Every file under `root` with its bytes, by relative path.
    static func tree(_ root: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(atPath: root)
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let full = root + "/" + path
            if FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue {
                files[path] = try Data(contentsOf: URL(fileURLWithPath: full))
            }
        }
        return files
    }

    static let start: Int64 = 1_780_012_800

    @Test func theSameSeedMakesTheSameWorld() async throws {
        let options = SimulationOptions(users: 120, days: 20, seed: 7, start: Self.start, turnkeyOutages: 0.1)
        let first = Self.temporary()
        let second = Self.temporary()
        let third = Self.temporary()
        defer { for path in [first, second, third] { try? FileManager.default.removeItem(atPath: path) } }
        let now: Int64 = 1_790_000_000
        _ = try await Simulator.runInProcess(options, out: first, now: now)
        _ = try await Simulator.runInProcess(options, out: second, now: now)
        // The state file names its key files by absolute path: the one difference the output
        // directory makes.
        var a = try Self.tree(first)
        var b = try Self.tree(second)
        func normalized(_ data: Data?, _ root: String) -> Data? {
            data.map {
                Data(
                    String(decoding: $0, as: UTF8.self).replacingOccurrences(of: root, with: "OUT")
                        .replacingOccurrences(of: root.replacingOccurrences(of: "/", with: "\\/"), with: "OUT").utf8)
            }
        }
        a["turnkey.json"] = normalized(a["turnkey.json"], first)
        b["turnkey.json"] = normalized(b["turnkey.json"], second)
        #expect(a.keys.sorted() == b.keys.sorted())
        for (path, bytes) in a where bytes != b[path] { Issue.record("\(path) differs between two runs of one seed") }
        #expect(a.keys.contains("ground-truth.json") && a.keys.contains("export/factor_lookup.jsonl"))
        var other = options
        other.seed = 8
        _ = try await Simulator.runInProcess(other, out: third, now: now)
        #expect(try Self.tree(third)["ground-truth.json"] != a["ground-truth.json"])
        let truth = try GroundTruth.load(first + "/ground-truth.json")
        #expect(truth.start == Self.start && truth.end == Self.start + 20 * 86_400)
        #expect(truth.counts["bf1.created", default: 0] > 100)
    }

    @Test func badOptionsAreRefusedWithOneLine() async throws {
        var options = SimulationOptions(users: 0, days: 5, seed: 1)
        await #expect(throws: ConsoleError.self) {
            try await Simulator.runInProcess(options, out: Self.temporary(), now: 0)
        }
        options.users = 5
        options.turnkeyFaults = 1.5
        do {
            _ = try await Simulator.runInProcess(options, out: Self.temporary(), now: 0)
            Issue.record("a rate above 1 was taken")
        } catch {
            #expect(error.code == "invalid_simulation" && error.message.contains("--turnkey-faults"))
        }
    }

    @Test func theCommandSimulatesAndReports() async throws {
        try #require(BackupctlBinary.exists)
        let out = Self.temporary()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let result = try await BackupctlBinary.run(
            [
                "--format", "json", "sandbox", "simulate", "--users", "40", "--days", "12", "--seed", "3", "--start",
                "2026-06-01T00:00:00Z", "--turnkey-faults", "0.1", "--out", out,
            ], environment: ["HOME": out, "PATH": "/usr/bin:/bin"])
        #expect(result.termination == .exited(0), "\(result.stderr)")
        let report = try JSONDecoder().decode(SimulationReport.self, from: Data(result.stdout.utf8))
        #expect(report.users == 40 && report.days == 12 && report.mode == "in-process")
        #expect(report.snapshotAt == "2026-06-13T00:00:00Z")
        for file in ["ground-truth.json", "service.log", "turnkey.json", "export/export.json"] {
            #expect(FileManager.default.fileExists(atPath: out + "/" + file), "\(file)")
        }
        let bad = try await BackupctlBinary.run(
            ["sandbox", "simulate", "--users", "10", "--days", "0", "--out", out],
            environment: ["HOME": out, "PATH": "/usr/bin:/bin"])
        #expect(bad.termination == .exited(1))
        #expect(
            bad.stderr.contains("--days must be 1…3650") && bad.stderr.split(separator: "\n").count == 1,
            "\(bad.stderr)")
    }
}
