import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A pseudo-terminal pair for one child (``ChildProcess/start(_:_:environment:input:directory:terminal:)``):
/// the child gets the slave as its controlling terminal; the monitor reads and writes the master.
public final class PseudoTerminal: Sendable {
    /// The slave side's device (`/dev/pts/N`).
    public let slavePath: String
    private let fds: Mutex<(master: Int32, slave: Int32)>

    /// - Throws: `POSIXError(.EIO)` when no terminal could be made.
    public init(columns: UInt16 = 100, rows: UInt16 = 40) throws {
        var master: Int32 = -1
        var slave: Int32 = -1
        var size = winsize(ws_row: rows, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0)
        guard openpty(&master, &slave, nil, nil, &size) == 0 else { throw POSIXError(.EIO) }
        for fd in [master, slave] { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK)
        slavePath = ttyname(slave).map { String(cString: $0) } ?? ""
        fds = Mutex((master, slave))
    }

    deinit {
        fds.withLock { fds in
            for fd in [fds.master, fds.slave] where fd >= 0 { close(fd) }
        }
    }

    /// Whether the terminal echoes what is typed (the modes the program set on its side).
    public var echoes: Bool {
        let slave = open(slavePath, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard slave >= 0 else { return true }
        defer { close(slave) }
        var modes = termios()
        guard tcgetattr(slave, &modes) == 0 else { return true }
        return modes.c_lflag & tcflag_t(ECHO) != 0
    }

    /// Hands the master to the monitor (which closes it when the child's side is gone).
    func takeMaster() -> Int32 {
        fds.withLock { fds in
            defer { fds.master = -1 }
            return fds.master
        }
    }

    /// Our copy of the slave goes once the child has its own, so the master sees the end.
    func closeSlave() {
        fds.withLock { fds in
            if fds.slave >= 0 { close(fds.slave) }
            fds.slave = -1
        }
    }
}
