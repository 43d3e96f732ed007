import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Kills every child's process group when the test process dies, however it dies (SIGKILL,
/// a crash, Ctrl-C on `make test`).
///
/// A small `/bin/sh` in a group of its own, ignoring the signals a terminal sends, reads
/// `+PGID` and `-PGID` lines from a pipe whose only writer is this process. When this process
/// dies the kernel closes that pipe; the shell sees end of file and SIGKILLs every group still
/// registered. A test process that ends normally has unregistered them all, so it kills nothing.
final class ChildReaper: Sendable {
    private let registry: Int32

    static let script = """
        trap '' HUP INT TERM PIPE QUIT
        groups=' '
        while IFS= read -r line; do
          case "$line" in
            +*) groups="$groups${line#+} " ;;
            -*) g=${line#-}; case "$groups" in *" $g "*) groups="${groups%% $g *} ${groups#* $g }" ;; esac ;;
          esac
        done
        for g in $groups; do kill -KILL -"$g" 2>/dev/null; done
        """

    init() {
        guard let pipe = try? SpawnRequest.pipe() else { fatalError("ChildReaper: pipe failed: \(errno)") }
        let ends = [pipe.0, pipe.1]
        registry = ends[1]
        do {
            var spawn = try SpawnRequest(
                path: "/bin/sh", arguments: ["-c", Self.script], environment: ["PATH": "/usr/bin:/bin"],
                directory: nil)
            defer { spawn.release() }
            spawn.dup(ends[0], to: 0)
            spawn.openNull(on: 1, mode: O_WRONLY)
            spawn.openNull(on: 2, mode: O_WRONLY)
            _ = try spawn.run(newSession: false)
        } catch {
            fatalError("ChildReaper: could not start /bin/sh: \(error)")
        }
        close(ends[0])
    }

    func register(_ group: pid_t) { send("+\(group)\n") }

    func unregister(_ group: pid_t) { send("-\(group)\n") }

    private func send(_ line: String) {
        var bytes = Array(line.utf8)
        _ = Glibc.write(registry, &bytes, bytes.count)
    }
}
