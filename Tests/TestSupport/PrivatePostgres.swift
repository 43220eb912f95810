import Foundation
import Spawning

/// A PostgreSQL server of one test's own, for faults that would disturb every other test on the shared one:
/// stopping and restarting the server mid-run. Built from the binaries the test script found
/// (`CLAWBACK_THROWAWAY_PG_BIN`), with trust authentication on 127.0.0.1 and a free port.
public final class PrivatePostgres: @unchecked Sendable {
    public let directory: String
    public let port: Int
    let bin: String
    /// initdb refuses to run as root: the server then runs as the `postgres` system user.
    let asServer: [String]

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public static func start() throws -> PrivatePostgres {
        guard let bin = ProcessInfo.processInfo.environment["CLAWBACK_THROWAWAY_PG_BIN"] else {
            throw Failure(description: "CLAWBACK_THROWAWAY_PG_BIN is not set: run the suite through Jobs/local/test.sh")
        }
        let directory = "/tmp/clawback-private-pg-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let root = getuid() == 0
        if root { try shell(["/usr/bin/chown", "postgres:postgres", directory]) }
        let asServer = root ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []
        try shell(asServer + ["\(bin)/initdb", "-D", "\(directory)/data", "-U", "clawback", "-A", "trust", "--no-sync", "-E", "UTF8", "--no-locale"])
        for _ in 0..<10 {
            let port = Int.random(in: 20_000..<60_000)
            let server = PrivatePostgres(directory: directory, port: port, bin: bin, asServer: asServer)
            if (try? server.startServer()) != nil { return server }
        }
        throw Failure(description: "the private PostgreSQL did not start in \(directory)")
    }

    init(directory: String, port: Int, bin: String, asServer: [String]) {
        self.directory = directory
        self.port = port
        self.bin = bin
        self.asServer = asServer
    }

    public var connectionString: String { "postgresql://clawback@127.0.0.1:\(port)/postgres" }

    public func startServer() throws {
        try Self.shell(
            asServer + [
                "\(bin)/pg_ctl", "-D", "\(directory)/data", "-l", "\(directory)/server.log", "-w", "-t", "30",
                "-o", "-c listen_addresses=127.0.0.1 -p \(port) -k \(directory) -c fsync=off", "start",
            ])
    }

    /// Stops the server the way a crash or a failover does (`immediate`: no checkpoint, every session cut).
    public func stopServer() throws {
        try Self.shell(asServer + ["\(bin)/pg_ctl", "-D", "\(directory)/data", "-m", "immediate", "-w", "stop"])
    }

    public func destroy() {
        try? stopServer()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs a command with posix_spawn and waitpid (`SpawnedChild`). Not `Process`: pg_ctl leaves a daemon
    /// behind, which inherits the descriptor Foundation watches for the child's end, so `waitUntilExit` never
    /// returns; its output goes to a file for the same reason (the daemon would hold a pipe open).
    static func shell(_ arguments: [String]) throws {
        let log = "/tmp/clawback-pg-ctl-\(UUID().uuidString).log"
        defer { unlink(log) }
        let child = try SpawnedChild(
            arguments, environment: ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }, standardOutput: .file(log),
            standardError: .file(log))
        let termination = child.wait()
        guard termination == .exited(0) else {
            let message = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw Failure(description: "\(arguments.joined(separator: " ")) failed (\(termination)): \(message)")
        }
    }
}
