import Foundation

/// A PgBouncer of one test's own in front of the test's PostgreSQL, in transaction pooling mode (the mode
/// that hands each transaction of a client to whichever server connection is free): what studios put between
/// game servers and PostgreSQL, and what breaks a session-level advisory lock. Debian's `pgbouncer`, as the
/// test script installs it; trust authentication on 127.0.0.1, a free port.
public final class PgBouncer: @unchecked Sendable {
    public let directory: String
    public let port: Int
    let asServer: [String]

    /// Starts PgBouncer for `database` of the test server (`PGHOST`/`PGPORT`), with at most `poolSize` server
    /// connections per user and database.
    public static func start(database: String, poolSize: Int = 4) throws -> PgBouncer {
        let environment = ProcessInfo.processInfo.environment
        guard let serverPort = environment["PGPORT"], let user = environment["PGUSER"] else {
            throw PrivatePostgres.Failure(description: "PGPORT and PGUSER are not set: run the suite through Jobs/local/test.sh")
        }
        // PgBouncer refuses to run as root: it runs as the server's user then, as the throwaway PostgreSQL does.
        let root = getuid() == 0
        let asServer = root ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []
        var tried: [String] = []
        for _ in 0..<10 {
            // A directory per attempt: a failed attempt's stop() removes its own.
            let directory = "/tmp/clawback-pgbouncer-\(UUID().uuidString.prefix(8))"
            tried.append(directory)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try "\"\(user)\" \"\"\n".write(toFile: "\(directory)/users.txt", atomically: true, encoding: .utf8)
            let port = Int.random(in: 20_000..<60_000)
            // logfile and pidfile must be named, or the daemon exits silently; unix_socket_dir empty: TCP only.
            try """
            [databases]
            \(database) = host=127.0.0.1 port=\(serverPort) dbname=\(database)
            [pgbouncer]
            listen_addr = 127.0.0.1
            listen_port = \(port)
            unix_socket_dir =
            auth_type = trust
            auth_file = \(directory)/users.txt
            pool_mode = transaction
            default_pool_size = \(poolSize)
            max_client_conn = 200
            ignore_startup_parameters = extra_float_digits,options
            logfile = \(directory)/pgbouncer.log
            pidfile = \(directory)/pgbouncer.pid

            """.write(toFile: "\(directory)/pgbouncer.ini", atomically: true, encoding: .utf8)
            if root { try PrivatePostgres.shell(["/usr/bin/chown", "-R", "postgres:postgres", directory]) }
            let bouncer = PgBouncer(directory: directory, port: port, asServer: asServer)
            // SpawnedChild gives the daemon no descriptor of this process but 0, 1 and 2.
            let daemon = asServer + ["/usr/sbin/pgbouncer", "-d", "\(directory)/pgbouncer.ini"]
            if (try? PrivatePostgres.shell(daemon)) != nil,
                bouncer.waitUntilListening()
            {
                return bouncer
            }
            bouncer.stop()
        }
        throw PrivatePostgres.Failure(description: "PgBouncer did not start in 10 tries (\(tried.joined(separator: ", ")))")
    }

    init(directory: String, port: Int, asServer: [String]) {
        self.directory = directory
        self.port = port
        self.asServer = asServer
    }

    /// The URI of `database` through PgBouncer, as the test server's user.
    public func connectionString(database: String) -> String {
        "postgresql://\(ProcessInfo.processInfo.environment["PGUSER"] ?? "postgres")@127.0.0.1:\(port)/\(database)"
    }

    /// Whether it accepts connections within five seconds (the daemon forks before it listens).
    func waitUntilListening() -> Bool {
        for _ in 0..<50 {
            let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(socket) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if connected == 0 { return true }
            usleep(100_000)
        }
        return false
    }

    public func stop() {
        if let pid = (try? String(contentsOfFile: "\(directory)/pgbouncer.pid", encoding: .utf8)).flatMap({
            Int32($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }) {
            // SIGKILL: this PgBouncer 1.18 answers SIGTERM by waiting for its clients to leave, and a fixture
            // owns no data worth a clean shutdown.
            kill(pid, SIGKILL)
            for _ in 0..<50 where kill(pid, 0) == 0 { usleep(100_000) }
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}
