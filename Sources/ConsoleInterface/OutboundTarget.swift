import BackupModel
import Foundation

/// The rules for a URL a tenant makes the console call (its Turnkey API and Backup Service).
/// Whoever sets them must not turn the server into a probe of its own network: https only
/// (http only to loopback, for sandboxes), no credentials, no path of its own (the console
/// appends the service's routes), and, on a server, no loopback, private, link-local or
/// reserved address unless `serve --allow-private-host` names the host. The refusal is the same
/// whether anything listens there or not: nothing is contacted before the check.
///
/// The host is resolved when the URL is set and again before each use; a name whose address
/// changes between that check and the connection (DNS rebinding) is not caught.
public enum OutboundTarget {
    /// The URL, normalized (lowercase scheme, no trailing slash).
    /// - Parameters:
    ///   - option: the option that gave it, for the message (`--backup-service-url`).
    ///   - policy: the server's policy; `nil` in-process (the operator's own network position).
    /// - Throws: `invalid_url` for the shape; `private_target` for an address the server may
    ///   not call; `unresolvable_host` when the name does not resolve (on a server).
    public static func check(_ text: String, option: String, policy: ServerPolicy?) throws(ConsoleError) -> String {
        var trimmed = text.trimmingCharacters(in: .whitespaces)
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        let shown = UntrustedText.escaped(String(withoutUserInfo(text).prefix(120)))
        guard trimmed.utf8.count <= 2048, let url = URL(string: trimmed), let scheme = url.scheme?.lowercased(),
            let host = url.host?.lowercased(), !host.isEmpty, url.user == nil, url.password == nil, url.query == nil,
            url.fragment == nil, url.path.isEmpty
        else {
            throw .invalid(
                "invalid_url", "\(option) must be https://HOST[:PORT] with no path, query or credentials, got \(shown)."
            )
        }
        guard scheme == "https" || (scheme == "http" && NetworkAddress.isLoopback(host: host)) else {
            throw .invalid("invalid_url", "\(option) must be an https URL (http only on loopback), got \(shown).")
        }
        if let policy { try checkAddress(host: host, option: option, policy: policy) }
        return scheme + trimmed.dropFirst(scheme.count)
    }

    /// `text` with the user and password of its authority (`https://USER:PASS@host`) replaced by
    /// `…`: an error message never repeats a credential someone put in a URL.
    static func withoutUserInfo(_ text: String) -> String {
        guard let scheme = text.range(of: "://") else { return text }
        let authority = text[scheme.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard let at = authority.lastIndex(of: "@") else { return text }
        return String(text[..<scheme.upperBound]) + "…" + String(text[at...])
    }

    /// On a server: every address of `host` must be a global one, unless the host is allowed.
    static func checkAddress(host: String, option: String, policy: ServerPolicy) throws(ConsoleError) {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if policy.allowedPrivateHosts.contains(bare) || policy.allowedPrivateHosts.contains(host) { return }
        let scopes: [NetworkAddress.Scope]
        if let literal = NetworkAddress.scope(of: bare) {
            scopes = [literal]
        } else if NetworkAddress.isLoopback(host: bare) {
            scopes = [.loopback]
        } else {
            scopes = resolve(bare)
            guard !scopes.isEmpty else {
                throw .invalid("unresolvable_host", "\(option): the host \(bare.prefix(253)) does not resolve here.")
            }
        }
        if let scope = scopes.first(where: { $0 != .global }) {
            throw .invalid(
                "private_target",
                "\(option) names \(bare.prefix(253)), a \(scope.rawValue) address of the server's own network; the "
                    + "server calls no such address unless started with --allow-private-host \(bare.prefix(253)).")
        }
    }

    /// The scopes of every address `host` resolves to (empty when it does not resolve).
    static func resolve(_ host: String) -> [NetworkAddress.Scope] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else { return [] }
        defer { freeaddrinfo(first) }
        var scopes: [NetworkAddress.Scope] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let info = next {
            if let address = info.pointee.ai_addr {
                switch Int32(info.pointee.ai_family) {
                case AF_INET:
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                        scopes.append(NetworkAddress.scope(ipv4: UInt32(bigEndian: $0.pointee.sin_addr.s_addr)))
                    }
                case AF_INET6:
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                        var bytes = $0.pointee.sin6_addr
                        scopes.append(NetworkAddress.scope(ipv6: withUnsafeBytes(of: &bytes) { Array($0) }))
                    }
                default:
                    scopes.append(.reserved)
                }
            }
            next = info.pointee.ai_next
        }
        return scopes
    }
}
