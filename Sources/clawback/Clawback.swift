import ArgumentParser
import CrashPoints
import Foundation
import Job

@main
struct Clawback: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clawback",
        abstract: "Find Apple in-app purchases refunded or revoked after they were granted, and claw them back.",
        discussion: """
            Exit codes: 0 done; 64 usage; 65 bad input data; 66 nothing to work on; 69 database or Apple unreachable; \
            70 internal error; 73 report not writable; 75 done with unverified grants or interrupted (rerun); 78 configuration, or the database \
            not migrated (run `clawback migrate`) or migrated by a newer clawback; \
            85 another run (or prune, or refund-requests answer) holds the lock.
            """,
        version: "clawback \(BuildInfo.description)",
        subcommands: [
            MigrateCommand.self, RunCommand.self, RunsCommand.self, ReportCommand.self, PruneCommand.self, GrantsCommand.self, ConfigCommand.self,
            InspectCommand.self, LedgerCommand.self, RefundRequestsCommand.self,
        ])

    static func main() async {
        CrashPoint.checkEnvironment()
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as any ExitStatusCarrying {
            // The one place an error becomes an exit status: its message on stderr, its status for the scheduler.
            FinalError.write("\(error)", status: error.exitStatus.rawValue)
            exit(withError: ExitCode(error.exitStatus.rawValue))
        } catch {
            // ArgumentParser's own: usage errors (64) are JSON too when the logs are; --help and --version are not errors.
            let code = exitCode(for: error)
            let message = self.message(for: error)
            if code != .success && !message.isEmpty && FinalError.logsJSON() {
                FinalError.write(message, status: code.rawValue)
                exit(withError: code)
            }
            exit(withError: error)
        }
    }
}
