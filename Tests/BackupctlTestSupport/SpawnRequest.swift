import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One `posix_spawn(3)`: the child's descriptors, its group or session, every signal's default
/// disposition and an empty mask, and no descriptor of ours beyond 0–2 (closefrom).
struct SpawnRequest {
    private let path: String
    private var argv: [UnsafeMutablePointer<CChar>?]
    private var envp: [UnsafeMutablePointer<CChar>?]
    private var actions = posix_spawn_file_actions_t()
    private var owned: [UnsafeMutablePointer<CChar>] = []

    init(path: String, arguments: [String], environment: [String: String], directory: String?) throws {
        self.path = path
        argv = ([path] + arguments).map { strdup($0) } + [nil]
        envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        posix_spawn_file_actions_init(&actions)
        if let directory {
            guard let addchdir = Self.symbol("posix_spawn_file_actions_addchdir_np", as: AddPath.self) else {
                throw ChildProcessError.spawnFailed(path, errno: ENOSYS)
            }
            let copy = strdup(directory)
            if let copy { owned.append(copy) }
            _ = addchdir(&actions, copy)
        }
    }

    mutating func dup(_ fd: Int32, to target: Int32) { posix_spawn_file_actions_adddup2(&actions, fd, target) }

    mutating func openNull(on target: Int32, mode: Int32 = O_RDONLY) {
        posix_spawn_file_actions_addopen(&actions, target, "/dev/null", mode, 0)
    }

    /// stdin, stdout and stderr on the terminal: opened after `setsid` without `O_NOCTTY`, so it
    /// becomes the new session's controlling terminal (^C typed into the master is SIGINT).
    mutating func onTerminal(_ slavePath: String) {
        posix_spawn_file_actions_addopen(&actions, 0, slavePath, O_RDWR, 0)
        posix_spawn_file_actions_adddup2(&actions, 0, 1)
        posix_spawn_file_actions_adddup2(&actions, 0, 2)
    }

    /// Spawns; the child leads a new process group (or, on a terminal, a new session).
    mutating func run(newSession: Bool) throws -> pid_t {
        if let closefrom = Self.symbol("posix_spawn_file_actions_addclosefrom_np", as: CloseFrom.self) {
            _ = closefrom(&actions, 3)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // POSIX_SPAWN_SETSID (0x80) is glibc's; Swift's Glibc module does not export it.
        let setsid: Int32 = 0x80
        var flags = Int32(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        flags |= newSession ? setsid : Int32(POSIX_SPAWN_SETPGROUP)
        posix_spawnattr_setflags(&attributes, Int16(flags))
        posix_spawnattr_setpgroup(&attributes, 0)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard result == 0 else { throw ChildProcessError.spawnFailed(path, errno: result) }
        return pid
    }

    /// A pipe whose ends close on exec (children get only what the file actions give them).
    static func pipe() throws -> (Int32, Int32) {
        var ends: [Int32] = [-1, -1]
        guard Glibc.pipe(&ends) == 0 else { throw ChildProcessError.spawnFailed("pipe", errno: errno) }
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }

    mutating func release() {
        posix_spawn_file_actions_destroy(&actions)
        for pointer in argv + envp { free(pointer) }
        for pointer in owned { free(pointer) }
        argv = []
        envp = []
        owned = []
    }

    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias AddPath =
        @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>?) -> Int32

    /// glibc's `_np` spawn actions, which Swift's Glibc module does not export.
    private static func symbol<T>(_ name: String, as type: T.Type) -> T? {
        guard let pointer = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(pointer, to: type)
    }
}
