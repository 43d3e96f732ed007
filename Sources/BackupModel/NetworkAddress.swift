#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What kind of network an IP address is on, for the rules that depend on it: plain HTTP only
/// to loopback, and no outbound call from the server to its own host or private networks
/// unless allowed by name. Pure parsing, no resolution.
public enum NetworkAddress {
    public enum Scope: String, Sendable, Equatable {
        /// 127.0.0.0/8, ::1.
        case loopback
        /// 10/8, 172.16/12, 192.168/16, 100.64/10 (carrier NAT), fc00::/7.
        case privateNetwork = "private"
        /// 169.254/16 (cloud metadata lives here), fe80::/10.
        case linkLocal = "link-local"
        /// 0.0.0.0/8, ::, multicast, broadcast, and other addresses nobody should be sent to.
        case reserved
        case global
    }

    /// The scope of an IP literal (`10.1.2.3`, `::1`, `[::1]`), or `nil` when `text` is not one.
    public static func scope(of text: String) -> Scope? {
        var host = text
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            return scope(ipv4: UInt32(bigEndian: v4.s_addr))
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, host, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        return scope(ipv6: bytes)
    }

    /// Whether only this machine can be reached there: a loopback IP or `localhost`.
    public static func isLoopback(host: String) -> Bool {
        let lowered = host.lowercased()
        if lowered == "localhost" || lowered.hasSuffix(".localhost") { return true }
        return scope(of: host) == .loopback
    }

    public static func scope(ipv4 address: UInt32) -> Scope {
        let a = address >> 24
        let b = (address >> 16) & 0xFF
        switch a {
        case 127: return .loopback
        case 10: return .privateNetwork
        case 172 where (16...31).contains(b): return .privateNetwork
        case 192 where b == 168: return .privateNetwork
        case 100 where (64...127).contains(b): return .privateNetwork
        case 169 where b == 254: return .linkLocal
        case 0, 224...255: return .reserved
        default: return .global
        }
    }

    public static func scope(ipv6 bytes: [UInt8]) -> Scope {
        guard bytes.count == 16 else { return .reserved }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) { return bytes[15] == 1 ? .loopback : .reserved }
        // IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d): the IPv4 address decides.
        let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
        let nat64 = bytes[0] == 0 && bytes[1] == 0x64 && bytes[2] == 0xFF && bytes[3] == 0x9B
        if mapped || nat64 {
            let v4 = bytes[12..<16].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            return scope(ipv4: v4)
        }
        if bytes[0] & 0xFE == 0xFC { return .privateNetwork }
        if bytes[0] == 0xFE, bytes[1] & 0xC0 == 0x80 { return .linkLocal }
        if bytes[0] == 0xFF { return .reserved }
        return .global
    }
}
