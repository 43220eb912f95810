import Job
import Logging

/// How a store's scheduled job other than a run ends on the command line: its summary printed (a table, or
/// JSON) whether it finished or left work for the next run, and its metrics file written either way (a file
/// that cannot be written is logged, never a failure of the job).
enum ScheduledJobCommand {
    static func run<Outcome: ScheduledJobOutcome>(
        _ perform: () async throws(ScheduledJobFailure<Outcome>) -> Outcome, render: (Outcome) -> String, metricsFile: String?,
        writeMetrics: (String, Outcome, Bool) throws -> Void, context: CommandContext
    ) async throws {
        func finish(_ outcome: Outcome, succeeded: Bool) {
            if let metricsFile {
                do {
                    try writeMetrics(metricsFile, outcome, succeeded)
                } catch {
                    context.logger.error("cannot write the metrics file", metadata: ["path": "\(metricsFile)", "error": "\(error)"])
                }
            }
            print(render(outcome))
        }
        do {
            finish(try await perform(), succeeded: true)
        } catch {
            if let outcome = error.outcome { finish(outcome, succeeded: false) }
            throw error
        }
    }
}
