import ArgumentParser
import Job

struct RunsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "runs", abstract: "List recent runs with their status and counters.", usage: "clawback runs [<options>]")

    @OptionGroup var options: CommandOptions
    @Option(help: "How many runs.") var limit = 20

    func run() async throws {
        print(try RunsListing.recent(limit: limit, try options.context(label: "clawback.runs")))
    }
}
