import ArgumentParser
import Job

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

    @OptionGroup var options: CommandOptions

    @Flag(help: "List every migration and whether it is applied, pending or changed; change nothing.")
    var status = false

    func run() async throws {
        let context = try options.context(label: "clawback.migrate")
        if status { return try SchemaMigration.status(context).emit() }
        for line in try SchemaMigration.migrate(context) { print(line) }
    }
}
