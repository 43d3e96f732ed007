import BackupModel
import ConsoleClient
import ConsoleServer
import ConsoleService
import Foundation
import Testing

/// Graceful shutdown drains in-flight jobs; a client that goes away cancels its job.
@Suite struct LifecycleTests {
    @Test func shutdownStopsAcceptingAndLetsTheJobInFlightFinish() async throws {
        let gate = UUID().uuidString
        try await ServerFixture.with(operations: SlowOperation.operations) { fixture in
            let remote = try fixture.remote()
            let started = Flag()
            let caller = Caller(token: fixture.rootToken, tenant: nil)
            let job = Task {
                try await remote.perform(SlowOperation(gate: gate), as: caller) { event in
                    if event.done == 1 { started.raise() }
                }
            }
            #expect(await eventually { started.isRaised })
            let stopped = Flag()
            let stopping = Task {
                try await fixture.running.stop()
                stopped.raise()
            }
            // The listener closes at once; the job's request is still being answered.
            #expect(await eventually { (try? await fixture.request(.GET, "/healthz")) == nil })
            #expect(!stopped.isRaised)
            Gates.open(gate)
            _ = try await job.value
            try await stopping.value
            #expect(stopped.isRaised)
        }
    }

    @Test func aClientThatGoesAwayCancelsItsJob() async throws {
        let gate = UUID().uuidString
        try await ServerFixture.with(operations: SlowOperation.operations) { fixture in
            let remote = try fixture.remote()
            let started = Flag()
            let caller = Caller(token: fixture.rootToken, tenant: nil)
            let job = Task {
                try await remote.perform(SlowOperation(gate: gate), as: caller) { event in
                    if event.done == 1 { started.raise() }
                }
            }
            #expect(await eventually { started.isRaised })
            job.cancel()
            do {
                _ = try await job.value
                Issue.record("the cancelled job finished")
            } catch let error as ConsoleError {
                #expect(error.code == "interrupted")
            }
            #expect(await eventually { Gates.wasCancelled(gate) })
            Gates.open(gate)
        }
    }
}
