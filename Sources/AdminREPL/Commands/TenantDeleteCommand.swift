import Access
import ArgumentParser
import BackupModel
import ConsoleStore

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
            let access = try ctx.access
            let session = try access.session(operator: try ctx.currentOperator(), tenant: tenant)
            try session.require(.manageOperators)
            try ctx.confirmDestructive(
                "Delete tenant \(tenant) and every backup, index row, role and journal entry it has here",
                tenant: tenant)
            let backups = try access.deleteTenant(session: session)
            if ctx.tenantName == tenant.rawValue { ctx.tenantName = nil }
            struct Deleted: Encodable {
                var tenant: String
                var deleted: Bool
                var backups: Int
            }
            return .message(
                "Deleted tenant \(tenant) (\(backups) backup(s)); the audit log keeps its entries.",
                json: Deleted(tenant: tenant.rawValue, deleted: true, backups: backups))
        }
    }
}
