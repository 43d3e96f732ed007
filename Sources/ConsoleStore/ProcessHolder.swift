import Foundation

/// Names this process as the holder of a lease or claim (`who@host:pid:nonce`), and tells when
/// another holder was a process on this host that is gone: a killed run's claim is then taken
/// over at once, while a holder elsewhere keeps its claim until it expires.
public enum ProcessHolder {
    /// A fresh holder name for `who` in this process.
    public static func name(_ who: String) -> String {
        let host = ProcessInfo.processInfo.hostName
        return "\(who)@\(host):\(getpid()):\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// The pid in `holder` when it names this host and no such process is alive.
    public static func deadLocalPid(_ holder: String) -> Int32? {
        let host = ProcessInfo.processInfo.hostName
        let parts = holder.split(separator: "@", maxSplits: 1).last?.split(separator: ":") ?? []
        guard parts.count == 3, parts[0] == host, let pid = Int32(parts[1]), pid > 0, pid != getpid() else {
            return nil
        }
        return kill(pid, 0) != 0 && errno == ESRCH ? pid : nil
    }
}
