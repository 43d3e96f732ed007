import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The one thread that watches every child: its exit (a pidfd), its stdout and stderr (read as
/// they come, both at once, so no pipe fills), its pending stdin, and the deadlines of the
/// tasks waiting on it. Waiting tasks hold no thread; this thread blocks only in `poll(2)`.
final class ChildMonitor: @unchecked Sendable {
    static let shared = ChildMonitor()

    struct Child {
        var pid: pid_t
        var command: String
        var pidfd: Int32
        var outFD: Int32
        var errFD: Int32
        /// The stdin pipe; for a terminal child, the master (the same descriptor as `outFD`).
        var inFD: Int32
        var terminal: Bool
        var out = Data()
        var err = Data()
        var pending: [UInt8] = []
        var closeInputWhenDrained = false
        var termination: ChildTermination?
        var released = false

        var finished: Bool { termination != nil && outFD < 0 && errFD < 0 }
        var output: ChildOutput { ChildOutput(stdout: out, stderr: err, termination: termination, finished: finished) }
    }

    struct Waiter {
        var child: Int
        /// true or false ends the wait with that answer; nil keeps waiting.
        var decide: @Sendable (ChildOutput) -> Bool?
        var deadline: ContinuousClock.Instant
        var continuation: CheckedContinuation<Bool, Never>
    }

    struct State {
        var children: [Int: Child] = [:]
        var waiters: [Int: Waiter] = [:]
        var cancelled: Set<Int> = []
        var nextID = 0
    }

    private let state = Mutex(State())
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let reaper: ChildReaper

    private init() {
        // A write to a pipe whose reader is gone must fail with EPIPE here, not kill the test
        // process; children get every signal's default back (POSIX_SPAWN_SETSIGDEF).
        _ = Glibc.signal(SIGPIPE, SIG_IGN)
        guard let ends = try? SpawnRequest.pipe() else { fatalError("ChildMonitor: pipe failed: \(errno)") }
        for fd in [ends.0, ends.1] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        wakeRead = ends.0
        wakeWrite = ends.1
        reaper = ChildReaper()
        let thread = Thread { [unowned self] in self.loop() }
        thread.name = "ChildMonitor"
        thread.start()
    }

    // MARK: - Spawning

    func spawn(
        path: String, arguments: [String], environment: [String: String], input: ChildProcess.Input,
        directory: String?, terminal: PseudoTerminal?
    ) throws -> ChildProcess {
        var spawn = try SpawnRequest(path: path, arguments: arguments, environment: environment, directory: directory)
        defer { spawn.release() }
        var out: (Int32, Int32) = (-1, -1)
        var err: (Int32, Int32) = (-1, -1)
        var stdin: (Int32, Int32) = (-1, -1)
        let pid: pid_t
        do {
            if let terminal {
                spawn.onTerminal(terminal.slavePath)
            } else {
                out = try Self.pipe()
                err = try Self.pipe()
                spawn.dup(out.1, to: 1)
                spawn.dup(err.1, to: 2)
                if case .null = input {
                    spawn.openNull(on: 0)
                } else {
                    stdin = try Self.pipe()
                    spawn.dup(stdin.0, to: 0)
                }
            }
            pid = try spawn.run(newSession: terminal != nil)
        } catch {
            for fd in [out.0, out.1, err.0, err.1, stdin.0, stdin.1] where fd >= 0 { close(fd) }
            throw error
        }
        for fd in [out.1, err.1, stdin.0] where fd >= 0 { close(fd) }
        terminal?.closeSlave()
        let pidfd = Self.pidfdOpen(pid)
        let command = ([path] + arguments).joined(separator: " ")
        var child: Child
        if let terminal {
            let master = terminal.takeMaster()
            child = Child(
                pid: pid, command: command, pidfd: pidfd, outFD: master, errFD: -1, inFD: master, terminal: true)
        } else {
            for fd in [out.0, err.0, stdin.1] where fd >= 0 { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
            child = Child(
                pid: pid, command: command, pidfd: pidfd, outFD: out.0, errFD: err.0, inFD: stdin.1, terminal: false)
        }
        if case .data(let data) = input {
            child.pending = Array(data)
            child.closeInputWhenDrained = true
            Self.flush(&child)
        }
        reaper.register(pid)
        let id = state.withLock { state in
            state.nextID += 1
            state.children[state.nextID] = child
            return state.nextID
        }
        wake()
        return ChildProcess(pid: pid, command: command, id: id, monitor: self)
    }

    private static func pipe() throws -> (Int32, Int32) { try SpawnRequest.pipe() }

    private static func pidfdOpen(_ pid: pid_t) -> Int32 {
        typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pidfd_open") else {
            fatalError("ChildMonitor needs pidfd_open (glibc 2.36, Linux 5.3)")
        }
        let fd = unsafeBitCast(symbol, to: PidfdOpen.self)(pid, 0)
        if fd < 0 { fatalError("pidfd_open(\(pid)) failed: \(errno)") }
        return fd
    }

    // MARK: - Requests from ChildProcess

    func output(_ id: Int) -> ChildOutput {
        state.withLock { $0.children[id]?.output }
            ?? ChildOutput(stdout: Data(), stderr: Data(), termination: .signaled(SIGKILL), finished: true)
    }

    /// Signals the child (or its group) while its pid is still its own: not after it was reaped.
    func signal(_ id: Int, _ number: Int32, group: Bool) {
        state.withLock { state in
            guard let child = state.children[id], child.termination == nil else { return }
            _ = kill(group ? -child.pid : child.pid, number)
        }
    }

    func write(_ id: Int, _ bytes: [UInt8]) {
        state.withLock { state in
            guard var child = state.children[id], child.inFD >= 0, !child.closeInputWhenDrained else { return }
            child.pending += bytes
            Self.flush(&child)
            state.children[id] = child
        }
        wake()
    }

    func closeInput(_ id: Int) {
        state.withLock { state in
            guard var child = state.children[id], !child.terminal else { return }
            child.closeInputWhenDrained = true
            Self.flush(&child)
            state.children[id] = child
        }
        wake()
    }

    /// The ChildProcess is gone: its group is killed if it still runs, the record dropped once reaped.
    func release(_ id: Int) {
        state.withLock { state in
            guard var child = state.children[id] else { return }
            if child.termination == nil { _ = kill(-child.pid, SIGKILL) }
            child.released = true
            if child.finished { state.children[id] = nil } else { state.children[id] = child }
        }
        wake()
    }

    /// Waits until `decide` answers, `seconds` pass (false), or the task is cancelled (false).
    func wait(_ id: Int, seconds: Double, _ decide: @escaping @Sendable (ChildOutput) -> Bool?) async -> Bool {
        let waiterID = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        let deadline = ContinuousClock.now + .milliseconds(Int64((max(0, seconds) * 1000).rounded()))
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let immediate: Bool? = state.withLock { state in
                    if state.cancelled.remove(waiterID) != nil { return false }
                    let output =
                        state.children[id]?.output
                        ?? ChildOutput(stdout: Data(), stderr: Data(), termination: nil, finished: true)
                    if let answer = decide(output) { return answer }
                    state.waiters[waiterID] = Waiter(
                        child: id, decide: decide, deadline: deadline, continuation: continuation)
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) } else { wake() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let waiter = state.waiters.removeValue(forKey: waiterID) else {
                    state.cancelled.insert(waiterID)
                    return nil
                }
                return waiter
            }
            waiter?.continuation.resume(returning: false)
        }
    }

    // MARK: - The loop

    private func wake() {
        var byte: UInt8 = 1
        _ = Glibc.write(wakeWrite, &byte, 1)
    }

    private enum Role {
        case wake, exit(Int), out(Int), err(Int), input(Int)
    }

    private func loop() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            var fds: [pollfd] = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            var roles: [Role] = [.wake]
            let timeout: Int32 = state.withLock { state in
                for (id, child) in state.children {
                    if child.termination == nil {
                        fds.append(pollfd(fd: child.pidfd, events: Int16(POLLIN), revents: 0))
                        roles.append(.exit(id))
                    }
                    if child.outFD >= 0 {
                        let write = child.terminal && !child.pending.isEmpty ? Int16(POLLOUT) : 0
                        fds.append(pollfd(fd: child.outFD, events: Int16(POLLIN) | write, revents: 0))
                        roles.append(.out(id))
                    }
                    if child.errFD >= 0 {
                        fds.append(pollfd(fd: child.errFD, events: Int16(POLLIN), revents: 0))
                        roles.append(.err(id))
                    }
                    if !child.terminal, child.inFD >= 0, !child.pending.isEmpty {
                        fds.append(pollfd(fd: child.inFD, events: Int16(POLLOUT), revents: 0))
                        roles.append(.input(id))
                    }
                }
                guard let next = state.waiters.values.map(\.deadline).min() else { return -1 }
                let left = ContinuousClock.now.duration(to: next)
                if left <= .zero { return 0 }
                let (seconds, attoseconds) = left.components
                return Int32(min(60_000, seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1))
            }
            let ready = poll(&fds, nfds_t(fds.count), timeout)
            if ready < 0, errno != EINTR { fatalError("ChildMonitor: poll failed: \(errno)") }
            var resume: [(CheckedContinuation<Bool, Never>, Bool)] = []
            state.withLock { state in
                // Each child is taken out of the table while it is changed: a copy left in the
                // table would make every append copy the whole output so far (quadratic in a
                // long output, such as a 100,000-line script's).
                for (index, entry) in fds.enumerated() where entry.revents != 0 {
                    switch roles[index] {
                    case .wake:
                        while Glibc.read(wakeRead, &buffer, buffer.count) > 0 {}
                    case .exit(let id):
                        guard var child = state.children.removeValue(forKey: id) else { continue }
                        Self.reap(&child)
                        if child.termination != nil { reaper.unregister(child.pid) }
                        state.children[id] = child
                    case .out(let id):
                        guard var child = state.children.removeValue(forKey: id) else { continue }
                        if entry.revents & Int16(POLLOUT) != 0 { Self.flush(&child) }
                        if entry.revents & ~Int16(POLLOUT) != 0 { Self.drain(&child.outFD, into: &child.out, &buffer) }
                        if child.terminal, child.outFD < 0 { child.inFD = -1 }
                        state.children[id] = child
                    case .err(let id):
                        guard var child = state.children.removeValue(forKey: id) else { continue }
                        Self.drain(&child.errFD, into: &child.err, &buffer)
                        state.children[id] = child
                    case .input(let id):
                        guard var child = state.children.removeValue(forKey: id) else { continue }
                        Self.flush(&child)
                        state.children[id] = child
                    }
                }
                let now = ContinuousClock.now
                for (waiterID, waiter) in state.waiters {
                    let output =
                        state.children[waiter.child]?.output
                        ?? ChildOutput(stdout: Data(), stderr: Data(), termination: nil, finished: true)
                    if let answer = waiter.decide(output) {
                        resume.append((waiter.continuation, answer))
                    } else if waiter.deadline <= now {
                        resume.append((waiter.continuation, false))
                    } else {
                        continue
                    }
                    state.waiters[waiterID] = nil
                }
                for (id, child) in state.children where child.released && child.finished {
                    state.children[id] = nil
                }
            }
            for (continuation, answer) in resume { continuation.resume(returning: answer) }
        }
    }

    /// The leader has exited (its pidfd is readable): the rest of its group is killed while the
    /// leader, a zombie, still holds the group's id; then it is reaped.
    private static func reap(_ child: inout Child) {
        _ = kill(-child.pid, SIGKILL)
        var status: Int32 = 0
        let reaped = waitpid(child.pid, &status, WNOHANG)
        if reaped == child.pid {
            let code = (status >> 8) & 0xff
            let signal = status & 0x7f
            child.termination = signal == 0 ? .exited(code) : .signaled(signal)
        } else if reaped < 0, errno == ECHILD {
            // Reaped by someone else's wait: the status is lost, never the end itself.
            child.termination = .exited(255)
        } else {
            return
        }
        close(child.pidfd)
        child.pidfd = -1
        if child.inFD >= 0, !child.terminal {
            close(child.inFD)
            child.inFD = -1
        }
        child.pending = []
    }

    /// Reads what is there; at end of file (or EIO, a terminal whose other side closed) closes `fd`.
    private static func drain(_ fd: inout Int32, into data: inout Data, _ buffer: inout [UInt8]) {
        while fd >= 0 {
            let n = Glibc.read(fd, &buffer, buffer.count)
            if n > 0 {
                data.append(contentsOf: buffer[0..<n])
                continue
            }
            if n < 0, errno == EAGAIN || errno == EINTR { return }
            close(fd)
            fd = -1
        }
    }

    /// Writes what is pending without blocking; closes the stdin pipe once drained if asked to.
    private static func flush(_ child: inout Child) {
        while child.inFD >= 0, !child.pending.isEmpty {
            let n = child.pending.withUnsafeBytes { Glibc.write(child.inFD, $0.baseAddress, $0.count) }
            if n > 0 {
                child.pending.removeFirst(n)
                continue
            }
            if n < 0, errno == EAGAIN || errno == EINTR { return }
            child.pending = []  // the reader is gone (EPIPE)
        }
        if child.pending.isEmpty, child.closeInputWhenDrained, !child.terminal, child.inFD >= 0 {
            close(child.inFD)
            child.inFD = -1
        }
    }
}
