import ArgumentParser
import BackupModel
import ConsoleService

extension TenantCommand {
    /// `tenant delete NAME`: everything the console holds for a tenant, confirmed and audited.
    struct Delete: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a tenant and all it holds in this console: backups, index, roles, journal (admin).",
            discussion: """
                Nothing is deleted in the Backup Service or Turnkey. On a terminal you confirm by typing \
                the tenant name; in batch mode pass --yes. The audit log keeps the tenant's entries.
                """)

        @Argument(help: "The tenant to delete.") var name: String

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let tenant = try TenantName(name)
            // Refused before the question when the operator may not delete it.
            _ = try await ctx.perform(TenantDeleteOperation(tenant: tenant.rawValue, checkOnly: true))
            try ctx.confirmDestructive(
                "Delete tenant \(tenant) and every backup, index row, role and journal entry it has here",
                tenant: tenant)
            let deleted = try await ctx.perform(TenantDeleteOperation(tenant: tenant.rawValue, checkOnly: false))
            if ctx.tenantName == tenant.rawValue { ctx.tenantName = nil }
            return .message(
                "Deleted tenant \(tenant) (\(deleted.backups) backup(s)); the audit log keeps its entries.",
                json: deleted)
        }
    }
}
