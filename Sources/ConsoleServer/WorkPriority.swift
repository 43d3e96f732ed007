import Foundation
import Logging
import ServiceLifecycle

#if canImport(Glibc)
    import Glibc
#endif

/// `serve --probe-listen … --work-nice N`: every thread of the server but the probe listener's
/// runs N nice levels below it, so a probe is answered ahead of the request work.
///
/// The probe listener has a thread of its own (``ProbeListener``), but on a machine whose cores
/// the lookups keep busy that thread still waits its turn behind them: with the kernel's default
/// slices a probe's p99 was 3.6–4 ms under 64 connections of lookups, and a probe that a load
/// balancer times out takes a busy console out of service. A process may always lower the
/// priority of its own threads (raise their nice value) but not raise it back without
/// privileges, so the work goes down rather than the probe up.
///
/// Threads come and go (a thread pool grows, and a new Dispatch worker sets its own nice from
/// its queue's QoS when it may), so the threads are checked again every ``interval``: a thread
/// started since runs at its first priority until then. On systems without `/proc` (not Linux)
/// this does nothing.
struct WorkPriority: Service {
    /// How many nice levels the work runs below the probe listener (1…19).
    let drop: Int32
    let logger: Logger

    static let interval: Duration = .milliseconds(500)
    /// The probe listener's thread name, as `top -H` and `/proc/PID/task/TID/comm` show it.
    static let probeThreadName = "probes"

    func run() async throws {
        #if os(Linux)
            guard let probe = await ProbeListener.threadID() else {
                // No /proc/thread-self: serve on as before. A service that returns stops the
                // server's group, so this one waits for the stop like the others.
                logger.warning("cannot lower the request work's priority: the probe listener's thread is unknown")
                try? await gracefulShutdown()
                return
            }
            let base = Self.nice(of: probe) ?? 0
            let target = min(19, base + drop)
            logger.notice(
                "request work runs at nice \(target), the probe listener at \(base)",
                metadata: ["work_nice": "\(drop)"])
            await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    Self.lower(allBut: probe, to: target)
                    do { try await Task.sleep(for: Self.interval) } catch { return }
                }
            }
        #else
            try? await gracefulShutdown()
        #endif
    }

    #if os(Linux)
        /// The calling thread's kernel id (`/proc/thread-self` is `PID/task/TID`).
        static func currentThreadID() -> Int32? {
            var buffer = [CChar](repeating: 0, count: 64)
            let count = readlink("/proc/thread-self", &buffer, buffer.count - 1)
            guard count > 0 else { return nil }
            let path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return path.split(separator: "/").last.flatMap { Int32($0) }
        }

        /// Names the calling thread (at most 15 bytes).
        static func nameCurrentThread(_ name: String) {
            let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return }
            defer { close(descriptor) }
            let bytes = Array(name.utf8.prefix(15))
            _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        }

        private static let which = __priority_which_t(PRIO_PROCESS.rawValue)

        /// The nice value of thread `id`, or `nil` when it is gone.
        static func nice(of id: Int32) -> Int32? {
            errno = 0
            let value = getpriority(which, id_t(id))
            return value == -1 && errno != 0 ? nil : value
        }

        /// Moves every thread of this process but `kept` that runs above nice `target` down to it.
        /// A thread that ended meanwhile is skipped. Returns how many were moved.
        @discardableResult
        static func lower(allBut kept: Int32, to target: Int32) -> Int {
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else {
                return 0
            }
            var moved = 0
            for entry in entries {
                guard let id = Int32(entry), id != kept, let nice = nice(of: id), nice < target else { continue }
                if setpriority(which, id_t(id), target) == 0 { moved += 1 }
            }
            return moved
        }
    #endif
}
