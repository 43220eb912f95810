import ArgumentParser
import Foundation
import Job
import Logging
import Postgres
import Storage

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply pending schema migrations (or list them with --status).",
        usage: "clawback migrate [<options>] [--status]",
        discussion: """
            Each migration runs in its own transaction and is recorded with its checksum in \
            clawback.schema_migrations. Rerunning is a no-op. A migration file changed after it was applied is \
            refused (exit 78). Afterwards the tail window's settings (acceptance window, clock skew, retention) are \
            written to clawback.settings from the configuration, for clawback.record_grant, and the monthly grant \
            partitions are created from the start of retention to two months ahead.
            """)

    @OptionGroup var configOptions: ConfigOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions

    @Flag(help: "List every migration and whether it is applied, pending or changed; change nothing.")
    var status = false

    func run() async throws {
        let logger = logging.makeLogger(label: "clawback.migrate")
        let configuration = try configOptions.load(logger: logger)
        let connection = try database.connect(logger: logger, configuration.database, requireSchema: false)
        let migrator = Migrator(logger: logger)
        do {
            if status {
                let statuses = try migrator.status(on: connection)
                print(MigrationStatusTable.render(statuses))
                if statuses.contains(where: { $0.state == .changed || $0.state == .unknown }) {
                    throw ExitCodes.configuration
                }
                return
            }
            let applied = try migrator.migrate(on: connection)
            if try configuration.tailWindowSettings.apply(on: connection) {
                let settings = configuration.tailWindowSettings
                print(
                    "tail window: purchases accepted for \(settings.acceptanceWindowDays) days, grants kept \(settings.grantRetentionMonths) months")
            }
            let created = try GrantPartitions.ensureAhead(on: connection)
            print(
                applied.isEmpty
                    ? "schema is current (\(migrator.migrations.count) migrations applied)"
                    : "applied \(applied.count) migration(s): \(applied.map(\.stem).joined(separator: ", "))"
            )
            if created > 0 { print("created \(created) monthly grant partition(s)") }
            for role in try migrator.legacyLedgerConsumers(on: connection) {
                logger.warning(
                    "a role can still read clawback.ledger directly, as consumers written before migration 0005 did: stop that consumer (it would see every entry as not applied and apply it again) and move it to claim_clawbacks and acknowledge_clawback, then REVOKE SELECT, UPDATE ON clawback.ledger FROM it",
                    metadata: ["role": "\(role)"])
                print("warning: role \(role) can still read clawback.ledger directly (a consumer from before 0005?): see CHANGELOG.md, 1.0.0")
            }
            print(MigrationStatusTable.render(try migrator.status(on: connection)))
        } catch let error as MigrationError {
            logger.error("migration refused", metadata: ["error": "\(error)"])
            throw ExitCodes.configuration
        } catch let error as PostgresError where error.code == .connectionBroken || error.code == .connectionFailed {
            logger.error("lost the database connection", metadata: ["error": "\(error)"])
            throw ExitCodes.unavailable
        } catch let error as PostgresError {
            logger.error("migration failed", metadata: ["error": "\(error)"])
            throw ExitCodes.software
        }
    }
}

/// `migrate --status` as an aligned text table.
enum MigrationStatusTable {
    static func render(_ statuses: [MigrationStatus]) -> String {
        var lines = [["version", "name", "state", "applied at"]]
        for status in statuses {
            lines.append([
                String(format: "%04d", status.version), status.name, status.state.rawValue,
                status.appliedAt.map(PostgresTimestamp.format) ?? "-",
            ])
        }
        return TextTable.render(lines)
    }
}
