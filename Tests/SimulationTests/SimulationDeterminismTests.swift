import BackupModel
import Foundation
import Simulation
import Testing

@Suite struct SimulationDeterminismTests {
    static func temporary() -> String {
        let path = NSTemporaryDirectory() + "sim-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func aSmallPopulationLivesAndLeavesGroundTruth() async throws {
        let out = Self.temporary()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let options = SimulationOptions(users: 60, days: 30, seed: 7, start: 1_780_000_000 / 86_400 * 86_400)
        let report = try await Simulator.runInProcess(options, out: out, now: 1_790_000_000)
        print(report)
        let truth = try GroundTruth.load(out + "/ground-truth.json")
        print(truth.counts.sorted { $0.key < $1.key })
        #expect(truth.backups.count > 0)
    }
}
