import Job
import Logging

/// How a store's scheduled job other than a run ends on the command line: its summary printed (a table, or
/// JSON) whether it finished or left work for the next run, and its metrics written to the file named and
/// pushed to the configured Pushgateway either way (metrics that cannot be delivered are logged, never a
/// failure of the job).
enum ScheduledJobCommand {
    static func run<Outcome: ScheduledJobOutcome>(
        _ perform: () async throws(ScheduledJobFailure<Outcome>) -> Outcome, render: (Outcome) -> String, metricsFile: String?,
        writeMetrics: (MetricsTarget, Outcome, Bool) async throws -> Void, context: CommandContext
    ) async throws {
        let target = MetricsTarget.configured(file: metricsFile, context.configuration)
        func finish(_ outcome: Outcome, succeeded: Bool) async {
            if !target.isEmpty {
                do {
                    try await writeMetrics(target, outcome, succeeded)
                } catch {
                    context.logger.error("cannot deliver the metrics", metadata: ["error": "\(error)"])
                }
            }
            print(render(outcome))
        }
        do {
            await finish(try await perform(), succeeded: true)
        } catch {
            if let outcome = error.outcome { await finish(outcome, succeeded: false) }
            throw error
        }
    }
}
