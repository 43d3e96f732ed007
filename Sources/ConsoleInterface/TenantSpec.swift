import BackupModel
import BackupService
import ConsoleStore
import Foundation
import Turnkey

/// Validation of `tenant create` flags into a record, where the console runs (the server, when
/// there is one): key files are paths on that machine; they must exist and be readable by their
/// owner only, and they are checked to hold a P-256 key but never sent anywhere.
public struct TenantSpec: Codable, Sendable {
    public var name: String
    public var sandbox: Bool
    public var turnkeyURL: String?
    public var turnkeyOrg: String?
    public var apiKeyFile: String?
    public var cleanupKeyFile: String?
    public var backupServiceURL: String?

    public init(
        name: String, sandbox: Bool, turnkeyURL: String?, turnkeyOrg: String?, apiKeyFile: String?,
        cleanupKeyFile: String?, backupServiceURL: String?
    ) {
        self.name = name
        self.sandbox = sandbox
        self.turnkeyURL = turnkeyURL
        self.turnkeyOrg = turnkeyOrg
        self.apiKeyFile = apiKeyFile
        self.cleanupKeyFile = cleanupKeyFile
        self.backupServiceURL = backupServiceURL
    }

    /// The Backup Service URL under ``OutboundTarget``'s rules, normalised without a trailing slash.
    public static func serviceURL(_ text: String, policy: ServerPolicy?) throws(ConsoleError) -> String {
        try OutboundTarget.check(text, option: "--backup-service-url", policy: policy)
    }

    /// The record to create. Key files are checked here, where the console runs; call it only
    /// once the caller may create tenants (a refusal must not reveal the server's files).
    func record(createdAt: Int64, policy: ServerPolicy?) throws(ConsoleError) -> TenantRecord {
        let tenant = try TenantName(name)
        if sandbox {
            guard turnkeyURL == nil, turnkeyOrg == nil, apiKeyFile == nil, backupServiceURL == nil else {
                throw .usage(
                    "A --sandbox tenant uses the in-process Turnkey and Backup Service sandboxes; drop the --turnkey-* and --backup-service-url options."
                )
            }
            if let cleanupKeyFile { try Self.checkKeyFile(cleanupKeyFile, option: "--cleanup-key-file") }
        } else {
            guard let url = turnkeyURL, let org = turnkeyOrg, let key = apiKeyFile else {
                throw .usage(
                    "A live tenant needs --turnkey-url, --turnkey-org and --turnkey-api-key-file (or pass --sandbox).")
            }
            guard !org.isEmpty, org.count <= 64, org.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else {
                throw .invalid("invalid_turnkey_org", "--turnkey-org must be an organization id (a uuid).")
            }
            try Self.checkKeyFile(key, option: "--turnkey-api-key-file")
            if let cleanupKeyFile { try Self.checkKeyFile(cleanupKeyFile, option: "--cleanup-key-file") }
            // After the files: a URL check may resolve a name, and its answer must not depend
            // on what a file holds.
            do {
                _ = try OutboundTarget.check(url, option: "--turnkey-url", policy: policy)
            } catch  where error.code == "invalid_url" {
                throw .invalid("invalid_turnkey_url", error.message)
            }
        }
        return TenantRecord(
            name: tenant, isSandbox: sandbox, turnkeyURL: turnkeyURL, turnkeyOrgId: turnkeyOrg,
            turnkeyAPIKeyFile: apiKeyFile.map(Self.absolute), cleanupKeyFile: cleanupKeyFile.map(Self.absolute),
            backupServiceURL: try backupServiceURL.map { (text) throws(ConsoleError) in
                try Self.serviceURL(text, policy: policy)
            },
            createdAt: createdAt)
    }

    static func absolute(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }

    /// The key file must exist, be readable by its owner only, and hold a P-256 key.
    static func checkKeyFile(_ path: String, option: String) throws(ConsoleError) {
        do {
            _ = try TurnkeyKeyFile.load(path, what: option)
        } catch {
            throw error.code == "internal_error" ? .invalid("invalid_key_file", "\(option): \(error.message)") : error
        }
    }
}

/// The Backup Service's `/health`, required before a tenant is pointed at it.
public enum BackupServiceHealth {
    public static func check(_ url: String) async throws(ConsoleError) {
        let client = try BackupServiceClient(baseURL: url, timeoutMillis: 10_000, attempts: 2)
        let health: BackupServiceWire.Health
        do throws(BackupServiceError) {
            health = try await client.health()
        } catch {
            throw error.consoleError.context("The Backup Service at \(url) failed its health check")
        }
        // What the service said is not repeated: the URL may name anything, and its answers
        // must not reach whoever set it.
        guard health.status == "ok" else {
            throw ConsoleError(
                .remote, code: "backup_service_unhealthy",
                "The Backup Service at \(url) did not answer /health with ok.")
        }
    }
}
