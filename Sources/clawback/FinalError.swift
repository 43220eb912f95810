import ArgumentParser
import Foundation
import Job

/// How the one error that ends a command is said on stderr: `clawback: <what>` for a person, or, with
/// `--log-format json`, one more JSON log line (level error, with the exit status), so that a log that
/// collects stderr (cron's file, the journal, a pod's log) holds nothing but JSON lines, failures included.
enum FinalError {
    /// Whether the command line asked for JSON logs (read from the arguments: a usage error ends the command
    /// before its options are parsed).
    static func logsJSON(_ arguments: [String] = CommandLine.arguments) -> Bool {
        zip(arguments, arguments.dropFirst()).contains { $0 == "--log-format" && $1 == "json" } || arguments.contains("--log-format=json")
    }

    static func write(_ message: String, status: ExitStatus) {
        guard logsJSON() else {
            FileHandle.standardError.write(Data("clawback: \(message)\n".utf8))
            return
        }
        FileHandle.standardError.write(
            JSONLogHandler.line(level: "error", logger: "clawback", message: message, fields: ["exit_status": Int(status.rawValue)]))
    }
}
