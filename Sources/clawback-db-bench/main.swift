// The database scenarios of the benchmark (Jobs/local/benchmark/bench.py), without Apple. Each prints one
// JSON line. Connects like clawback: $CLAWBACK_DATABASE_URL, else libpq's PG* variables.
//
//   clawback-db-bench [GRANTS] [ENTRIES]                 B5: the job's read and write paths (1000000 20000)
//   clawback-db-bench ledger [ENTRIES] [CONSUMERS] [BATCH] [--one-statement]
//                                                        B7: game servers claim and acknowledge (20000 8 100)
//   clawback-db-bench refund-facts [GRANTS] [REQUESTS]   B9: refund requests' facts over a big grants table (10000000 2000)
import Foundation
import Postgres

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func benchConnection() throws -> PostgresConnection {
    try PostgresConnection(
        PostgresConfiguration(
            connectionString: ProcessInfo.processInfo.environment["CLAWBACK_DATABASE_URL"] ?? "", applicationName: "clawback-db-bench",
            statementTimeout: .seconds(1800)))
}

func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

func printJSON(_ figures: [String: Any]) throws {
    let json = try JSONSerialization.data(withJSONObject: figures, options: [.sortedKeys])
    print(String(decoding: json, as: UTF8.self))
}

let arguments = Array(CommandLine.arguments.dropFirst())
func argument(_ index: Int, default value: Int) -> Int { arguments.count > index ? Int(arguments[index]) ?? value : value }

do {
    if arguments.first == "ledger" {
        try benchmarkLedgerConsumers(
            entryCount: argument(1, default: 20_000), consumerCount: argument(2, default: 8), batch: argument(3, default: 100),
            oneStatement: arguments.contains("--one-statement"))
    } else if arguments.first == "refund-facts" {
        try benchmarkRefundFacts(grantCount: argument(1, default: 10_000_000), requestCount: argument(2, default: 2_000))
    } else {
        let grants = argument(0, default: 1_000_000)
        try benchmarkDatabasePaths(grantCount: grants, entryCount: min(grants, argument(1, default: 20_000)))
    }
} catch {
    FileHandle.standardError.write(Data("clawback-db-bench: \(error)\n".utf8))
    exit(1)
}
