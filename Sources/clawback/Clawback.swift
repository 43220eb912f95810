import AppStoreDriver
import ArgumentParser
import CrashPoints
import Foundation
import GooglePlayDriver
import Job
import StripeDriver

@main
struct Clawback: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clawback",
        abstract:
            "Find in-app purchases refunded, revoked or charged back after they were granted (App Store, Google Play, a web shop on Stripe), and claw them back.",
        discussion: """
            Exit codes: 0 done; 64 usage; 65 bad input data; 66 nothing to work on; 69 database or store unreachable; \
            70 internal error; 73 report not writable; 75 done with unverified grants or interrupted (rerun); \
            77 the database role lacks a privilege (named in the message); 78 configuration, or the database \
            not migrated (run `clawback migrate`) or migrated by a newer clawback; \
            85 another run (or prune, refund-requests answer, google-play sweep-voids, google-play notifications, stripe disputes) holds the lock.
            """,
        version: "clawback \(BuildInfo.description)",
        subcommands: [
            MigrateCommand.self, RunCommand.self, RunsCommand.self, ReportCommand.self, PruneCommand.self, GrantsCommand.self, ConfigCommand.self,
            InspectCommand.self, LedgerCommand.self, RefundRequestsCommand.self, GooglePlayCommand.self, StripeCommand.self,
        ])

    /// The one exit path: every error that leaves a command carries its `ExitStatus` (Runtime/ExitStatus.swift),
    /// or is a database failure classified here, and is said once; ArgumentParser's own outcomes (help,
    /// version, usage errors) keep their 0 and 64 through its `exit(withError:)`; anything nothing classified
    /// is an internal error, 70. Nothing else ends the process but `ExitStatus.exitProcess()`
    /// (OneExitPathTests), so no command can end with a code the documented table does not have.
    static func main() async {
        CrashPoint.checkEnvironment()
        // Each store's driver, registered once, before a command can ask for a store.
        for driver: any StoreDriver in [AppStoreDriver(), GooglePlayDriver(), StripeDriver()] { StoreDrivers.register(driver) }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            end(.success)
        } catch {
            if let carried = ExitStatus.carried(by: error) {
                FinalError.write("\(carried)", status: carried.exitStatus)
                end(carried.exitStatus)
            }
            switch ExitStatus(rawValue: exitCode(for: error).rawValue) {
            case .success:
                exit(withError: error)  // --help and --version: ArgumentParser prints them
            case .usage where FinalError.logsJSON():
                FinalError.write(message(for: error), status: .usage)
                end(.usage)
            case .usage:
                exit(withError: error)  // ArgumentParser prints the usage error with the command's usage, and exits 64
            default:
                FinalError.write("internal error: \(error)", status: .software)
                end(.software)
            }
        }
    }

    static func end(_ status: ExitStatus) -> Never {
        status.exitProcess()
    }
}
