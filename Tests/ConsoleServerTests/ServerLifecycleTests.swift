import BackupModel
import ConsoleClient
import ConsoleServer
import ConsoleService
import Foundation
import Testing

/// Graceful shutdown drains in-flight jobs; a client that goes away cancels its job.
@Suite struct ServerLifecycleTests {
    /// Starts the gated slow operation through the client and waits for its first progress.
    func startSlowJob(_ fixture: ServerFixture, gate: String) async throws -> Task<Done, any Error> {
        let remote = try fixture.remote()
        let started = Flag()
        let caller = Caller(token: fixture.rootToken, tenant: nil)
        let job = Task {
            try await remote.perform(SlowOperation(gate: gate), as: caller) { event in
                if event.done == 1 { started.raise() }
            }
        }
        #expect(await eventually { started.isRaised })
        return job
    }

    @Test func shutdownStopsAcceptingAndLetsTheJobInFlightFinish() async throws {
        let gate = UUID().uuidString
        try await ServerFixture.with(operations: SlowOperation.operations) { fixture in
            let job = try await startSlowJob(fixture, gate: gate)
            let stopped = Flag()
            let stopping = Task {
                try await fixture.running.stop()
                stopped.raise()
            }
            // The listener closes at once; the job's request is still being answered.
            let port = try #require(Int(fixture.url.split(separator: ":").last ?? ""))
            #expect(await eventually { !canConnect(port: port) })
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
            let job = try await startSlowJob(fixture, gate: gate)
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

    /// A plain operation's whole answer is awaited in one piece (not streamed); cancelling the
    /// caller still ends the call at once, without waiting for the server's answer.
    @Test func cancellingAPlainOperationEndsTheCallAtOnce() async throws {
        let gate = UUID().uuidString
        try await ServerFixture.with(operations: SlowPlainOperation.operations) { fixture in
            let remote = try fixture.remote()
            let caller = Caller(token: fixture.rootToken, tenant: nil)
            let call = Task { try await remote.perform(SlowPlainOperation(gate: gate), as: caller) }
            #expect(await eventually { Gates.hasStarted(gate) })
            call.cancel()
            do {
                _ = try await call.value
                Issue.record("the cancelled call returned an answer")
            } catch let error as ConsoleError {
                #expect(error.code == "interrupted")
            }
            // The gate was never opened: the call ended because it was cancelled.
            #expect(!Gates.isOpen(gate))
            Gates.open(gate)
        }
    }
}

/// Whether a new TCP connection to 127.0.0.1:`port` is accepted (a pooled HTTP client would
/// reuse an open one, so this asks the kernel).
func canConnect(port: Int) -> Bool {
    guard let fd = connectLoopback(port: port) else { return false }
    close(fd)
    return true
}

/// A new TCP connection to 127.0.0.1:`port`: its descriptor, or nil when refused.
func connectLoopback(port: Int, from source: String = "127.0.0.1") -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    // Any 127.0.0.0/8 address is this machine: a test plays clients at several addresses.
    var local = sockaddr_in()
    local.sin_family = sa_family_t(AF_INET)
    local.sin_addr.s_addr = inet_addr(source)
    let bound = withUnsafePointer(to: &local) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else {
        close(fd)
        return nil
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard result == 0 else {
        close(fd)
        return nil
    }
    return fd
}
