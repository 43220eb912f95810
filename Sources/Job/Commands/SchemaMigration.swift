import Foundation
import Logging
import Storage

/// `clawback migrate`: applies the pending migrations, writes the tail window's settings, creates the grant
/// partitions ahead; or, with `--status`, only reports. The only command that connects without the schema
/// check. Its failures carry their own exit status: a `MigrationError` (a changed or unknown migration) 78,
/// a `DatabaseError` 69 when a retry may help, 77 for a privilege the role lacks, else 70.
public enum SchemaMigration {
    /// What `migrate --status` found: the table, then (exit 78) the `SchemaError` when a migration changed or
    /// is unknown to this binary, after the table is shown, so the operator sees which.
    public static func status(_ context: CommandContext) throws -> CommandOutput {
        let connection = try context.connect(requireSchema: false)
        let statuses = try Migrator(logger: context.logger).status(on: connection)
        return CommandOutput([table(statuses)], failure: SchemaError(statuses, pendingIsAProblem: false))
    }

    /// Migrates and returns what to tell the operator, line by line.
    public static func migrate(_ context: CommandContext) throws -> [String] {
        let connection = try context.connect(requireSchema: false)
        let migrator = Migrator(logger: context.logger)
        let applied = try migrator.migrate(on: connection)
        var lines: [String] = []
        let settings = context.configuration.tailWindowSettings
        if try settings.apply(on: connection) {
            lines.append(
                "tail window: purchases accepted for \(settings.acceptanceWindowDays) days, grants kept \(settings.grantRetentionMonths) months")
        }
        let created = try GrantPartitions.ensureAhead(on: connection)
        lines.append(
            applied.isEmpty
                ? "schema is current (\(migrator.migrations.count) migrations applied)"
                : "applied \(applied.count) migration(s): \(applied.map(\.stem).joined(separator: ", "))")
        if created > 0 { lines.append("created \(created) monthly grant partition(s)") }
        for role in try migrator.legacyLedgerConsumers(on: connection) {
            context.logger.warning(
                "a role can still read clawback.ledger directly, as consumers written before migration 0005 did: stop that consumer (it would see every entry as not applied and apply it again) and move it to claim_clawbacks and acknowledge_clawback, then REVOKE SELECT, UPDATE ON clawback.ledger FROM it",
                metadata: ["role": "\(role)"])
            lines.append("warning: role \(role) can still read clawback.ledger directly (a consumer from before 0005?): see CHANGELOG.md, 1.0.0")
        }
        lines.append(table(try migrator.status(on: connection)))
        return lines
    }

    static func table(_ statuses: [MigrationStatus]) -> String {
        var rows = [["version", "name", "state", "applied at"]]
        for status in statuses {
            rows.append([
                String(format: "%04d", status.version), status.name, status.state.rawValue, status.appliedAt.map(DatabaseTimestamp.format) ?? "-",
            ])
        }
        return TextTable.render(rows)
    }
}
