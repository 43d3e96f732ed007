import BackupCrypto
import BackupModel

extension TurnkeyClient {
    /// What `tenant create` learns from a successful check.
    public struct TenantCheck: Sendable, Equatable {
        public var organizationId: String
        public var organizationName: String?
        public var userId: String?
        public var username: String?
    }

    /// Checks a live tenant before it is saved: the key file is owner-only and holds a P-256 key,
    /// the URL answers, and `whoami` with that key names the given parent organization.
    ///
    /// - Throws: ``ConsoleError``: `invalid_key_file`/`insecure_key_file` (exit 1), a `.remote`
    ///   error when Turnkey cannot be reached or refuses the key (exit 2), or `turnkey_org_mismatch`
    ///   when the key belongs to another organization.
    public static func verifyTenant(
        url: String, organizationId: String, apiKeyFile: String,
        transport: any TurnkeyTransport = HTTPClientTransport(),
        timing: TurnkeyTiming = .system
    ) async throws(ConsoleError) -> TenantCheck {
        let key = try TurnkeyKeyFile.load(apiKeyFile, what: "Turnkey API key file")
        let client = TurnkeyClient(
            baseURL: url, transport: transport, policy: TurnkeyRetryPolicy(timeoutMillis: 10_000), timing: timing)
        let answer: TurnkeyWire.WhoamiResponse
        do {
            answer = try await client.whoami(organizationId: organizationId, signer: .apiKey(key))
        } catch {
            // Turnkey answered, and the org is unknown to it: the operator's input is wrong, not Turnkey.
            if error.kind == .organizationNotFound {
                throw ConsoleError.invalid(
                    "turnkey_org_not_found",
                    "Turnkey at \(url) has no organization \(organizationId); check --turnkey-org (the parent organization id)."
                )
            }
            throw error.consoleError("Checking Turnkey at \(url) for organization \(organizationId) failed")
        }
        guard answer.organizationId == organizationId else {
            throw ConsoleError(
                .verificationFailed, code: "turnkey_org_mismatch",
                "The API key in \(apiKeyFile) belongs to organization \(answer.organizationId), not \(organizationId).")
        }
        return TenantCheck(
            organizationId: answer.organizationId, organizationName: answer.organizationName, userId: answer.userId,
            username: answer.username)
    }
}
