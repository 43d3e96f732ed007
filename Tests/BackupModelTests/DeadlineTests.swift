import BackupModel
import Testing

@Suite(.timeLimit(.minutes(10))) struct DeadlineTests {
    @Test func workThatEndsInTimeKeepsItsValueAndItsError() async throws {
        #expect(try await Deadline.run(millis: 60_000) { 42 } == 42)
        await #expect(throws: CancellationError.self) {
            _ = try await Deadline.run(millis: 60_000) { () async throws -> Int in throw CancellationError() }
        }
    }

    @Test func workPastItsDeadlineIsCancelledAndGivesNil() async throws {
        // Sleeps far past the limit unless cancelled: only the deadline ends it.
        let value = try await Deadline.run(millis: 50) { () async throws -> Int in
            try await Task.sleep(for: .seconds(3600))
            return 1
        }
        #expect(value == nil)
    }
}
