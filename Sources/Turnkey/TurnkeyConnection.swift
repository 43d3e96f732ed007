import BackupModel

/// Everything needed to talk to one tenant's Turnkey: where, which parent org, and the keys.
///
/// Live tenants load it from the tenant record (``live(url:organizationId:apiKeyFile:cleanupKeyFile:transport:)``,
/// key files checked owner-only); sandbox tenants get one from `SandboxTenant` in TurnkeySandbox.
/// Keys stay in ``SecretBytes`` and are never printed.
public struct TurnkeyConnection: Sendable {
    public var baseURL: String
    public var parentOrgId: String
    /// The tenant API key: lists and reads sub-orgs under the parent.
    public var apiKey: SecretBytes
    /// The deletion-only cleanup key (a user inside each sub-org), if the tenant has one.
    public var cleanupKey: SecretBytes?
    public var transport: any TurnkeyTransport

    public init(
        baseURL: String, parentOrgId: String, apiKey: SecretBytes, cleanupKey: SecretBytes?,
        transport: any TurnkeyTransport
    ) {
        self.baseURL = baseURL
        self.parentOrgId = parentOrgId
        self.apiKey = apiKey
        self.cleanupKey = cleanupKey
        self.transport = transport
    }

    /// Loads a live tenant's connection: both key files must be owner-only P-256 keys.
    /// - Throws: ``ConsoleError`` `not_configured` when the tenant lacks URL, org or API key file,
    ///   or the key-file errors of ``TurnkeyKeyFile/load(_:what:)``.
    public static func live(
        url: String?, organizationId: String?, apiKeyFile: String?, cleanupKeyFile: String?,
        transport: any TurnkeyTransport = HTTPClientTransport()
    ) throws(ConsoleError) -> TurnkeyConnection {
        guard let url, let organizationId, let apiKeyFile else {
            throw .invalid(
                "not_configured",
                "The tenant has no Turnkey URL, parent org or API key file; recreate it with --turnkey-url, --turnkey-org and --turnkey-api-key-file."
            )
        }
        let apiKey = try TurnkeyKeyFile.load(apiKeyFile, what: "Turnkey API key file")
        let cleanupKey = try cleanupKeyFile.map { (path: String) throws(ConsoleError) in
            try TurnkeyKeyFile.load(path, what: "cleanup key file")
        }
        return TurnkeyConnection(
            baseURL: url, parentOrgId: organizationId, apiKey: apiKey, cleanupKey: cleanupKey, transport: transport)
    }
}
