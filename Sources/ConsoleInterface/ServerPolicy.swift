import BackupModel
import Foundation

/// What a console serving others (`backupctl serve`) allows that the operator's own in-process
/// console need not restrict: where on the server's disk a tenant admin's `import` may read,
/// and which private or loopback hosts a tenant's outbound URLs may name. In-process, the
/// operator is on their own machine and reads what they can read; on a server, a tenant admin
/// must not reach past the tenant.
public struct ServerPolicy: Sendable, Equatable {
    /// `serve --import-root DIR`: tenant T's imports read below `DIR/T` only; without it the
    /// server takes no imports.
    public var importRoot: String?
    /// `serve --allow-private-host NAME` (repeatable): hosts a tenant's Turnkey or Backup
    /// Service URL may name although they are loopback, private or link-local (an internal
    /// service, a sandbox on the server's host). Compared as written in the URL, lowercased.
    public var allowedPrivateHosts: Set<String>

    public init(importRoot: String? = nil, allowedPrivateHosts: Set<String> = []) {
        self.importRoot = importRoot
        self.allowedPrivateHosts = Set(allowedPrivateHosts.map { $0.lowercased() })
    }

    /// The directory `requested` names for `tenant`'s import, on a server: below
    /// `importRoot/tenant` after every symbolic link is resolved, never through `..`.
    /// - Throws: `imports_disabled` without a root; `invalid_import_path` for `..`, a control
    ///   character, or a path whose real location is outside the tenant's directory;
    ///   `invalid_directory` when it does not exist. Messages name the path as given, never
    ///   what the server's disk holds.
    public func importDirectory(_ requested: String, tenant: TenantName) throws(ConsoleError) -> String {
        guard let importRoot else {
            throw ConsoleError(
                .permissionDenied, code: "imports_disabled",
                "This server takes no imports: it was started without --import-root.")
        }
        let shown = UntrustedText.escaped(String(requested.prefix(200)))
        guard !requested.isEmpty, requested.utf8.count <= 4096,
            !requested.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else {
            throw .invalid(
                "invalid_import_path", "The import path \(shown) is empty, too long or holds a control character.")
        }
        guard !requested.split(separator: "/").contains("..") else {
            throw .invalid(
                "invalid_import_path",
                "The import path \(shown) goes up with `..`; name a directory below the tenant's.")
        }
        let base = (importRoot as NSString).appendingPathComponent(tenant.rawValue)
        guard let realBase = Self.realPath(base) else {
            throw .invalid(
                "invalid_import_path",
                "This server has no import directory for tenant \(tenant) (its --import-root has no \(tenant.rawValue)/)."
            )
        }
        let candidate = requested.hasPrefix("/") ? requested : (base as NSString).appendingPathComponent(requested)
        guard let real = Self.realPath(candidate) else {
            throw .invalid("invalid_directory", "Import needs an export directory; \(shown) is not one.")
        }
        guard real == realBase || real.hasPrefix(realBase.hasSuffix("/") ? realBase : realBase + "/") else {
            throw .invalid(
                "invalid_import_path",
                "The import path \(shown) is outside tenant \(tenant)'s import directory on this server; name a directory below it."
            )
        }
        return real
    }

    /// Where `requested` names the output of a job that writes files for `tenant` (`sandbox
    /// simulate --out`), on a server: the same rules as ``importDirectory(_:tenant:)``, except
    /// that the directory itself may not exist yet; its parent must, below `importRoot/tenant`.
    /// A tenant admin's job never writes past the tenant's directory of the server's disk.
    /// - Throws: `imports_disabled` without a root; `invalid_output_path` for anything else.
    public func outputDirectory(_ requested: String, tenant: TenantName) throws(ConsoleError) -> String {
        var trimmed = Substring(requested)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        let slash = trimmed.lastIndex(of: "/")
        let name = String(slash.map { trimmed[trimmed.index(after: $0)...] } ?? trimmed)
        let parent = slash.map { $0 == trimmed.startIndex ? "/" : String(trimmed[..<$0]) } ?? ""
        guard !name.isEmpty, name != ".", name != "..", name != "/", requested.utf8.count <= 4096,
            !requested.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else {
            throw .invalid(
                "invalid_output_path",
                "The output path \(UntrustedText.escaped(String(requested.prefix(200)))) must name a directory below the tenant's, without control characters."
            )
        }
        let realParent: String
        do {
            realParent = try importDirectory(parent.isEmpty ? "." : parent, tenant: tenant)
        } catch  where error.code != "imports_disabled" {
            throw .invalid(
                "invalid_output_path",
                "The output path \(UntrustedText.escaped(String(requested.prefix(200)))) is not below tenant \(tenant)'s directory on this server, or its parent does not exist."
            )
        }
        let target = (realParent as NSString).appendingPathComponent(name)
        // An existing entry (a link especially) must resolve below the tenant's directory too.
        if let real = Self.realPath(target), real != target {
            _ = try outputDirectory(real, tenant: tenant)
        }
        return target
    }

    /// The path with every symbolic link and `.` resolved, or `nil` when it does not exist.
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
