import Foundation

/// Where a stretch of wall time went, for a client talking to one PostgreSQL backend on this machine: the
/// client's CPU (getrusage), the backend's CPU (/proc/PID/stat), and the machine's CPU taken by the host
/// (steal, /proc/stat) or left idle. B5's rate moved threefold across days with the code unchanged; these
/// figures say whether a change is the client's, the server's or the machine's.
struct CPUSample {
    let client: Double
    let backend: Double
    /// Per state of /proc/stat's first line (user, nice, system, idle, iowait, irq, softirq, steal), seconds
    /// summed over the machine's cores.
    let machine: [Double]

    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    static func now(backendPID: Int32) -> CPUSample {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let client =
            Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        return CPUSample(client: client, backend: backendSeconds(backendPID), machine: machineSeconds())
    }

    /// utime + stime of a process (fields 14 and 15 of /proc/PID/stat, after the parenthesized name).
    static func backendSeconds(_ pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return .nan }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return .nan }
        return (user + system) / ticksPerSecond
    }

    static func machineSeconds() -> [Double] {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8), let line = stat.split(separator: "\n").first else {
            return []
        }
        return line.split(separator: " ").dropFirst().prefix(8).compactMap { Double($0).map { $0 / ticksPerSecond } }
    }

    /// The figures between `start` and `self`, over `rows` rows in `wall` seconds.
    func figures(since start: CPUSample, rows: Int, wall: Double) -> [String: Any] {
        let machine = zip(machine, start.machine).map { $0 - $1 }
        let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
        func share(_ index: Int) -> Double { machine.count > index ? machine[index] / (wall * cores) : .nan }
        return [
            "client_cpu_us_per_row": (client - start.client) / Double(rows) * 1e6,
            "backend_cpu_us_per_row": (backend - start.backend) / Double(rows) * 1e6,
            "wall_us_per_row": wall / Double(rows) * 1e6,
            "machine_idle_share": share(3), "machine_steal_share": share(7),
        ]
    }
}
