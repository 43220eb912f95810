import Foundation
import HTTP
import Reports

/// Where a job's metrics go: a Prometheus textfile for node_exporter (written atomically, so a scrape never
/// reads half a file), a Prometheus Pushgateway (where nothing scrapes a batch job's machine, as on
/// Kubernetes), or both. Each job's series are its own group at the Pushgateway (`job`, the series' prefix,
/// and a sharded run's `shard`), pushed with POST so that a series the push leaves out keeps its value:
/// a job that did not succeed leaves out its `…last_success_timestamp_seconds`, which keeps the last
/// success's time, as the textfile carries it over from the previous file.
public struct MetricsTarget: Sendable {
    public var file: String?
    public var pushgateway: Pushgateway?

    public struct Pushgateway: Sendable, Equatable {
        /// The Pushgateway's base URL (`http://pushgateway.monitoring:9091`).
        public var url: String
        public var timeoutSeconds: Int
        /// Labels beyond `job` that tell this job's group apart (a shard's index).
        public var grouping: [String: String]

        public init(url: String, timeoutSeconds: Int = 10, grouping: [String: String] = [:]) {
            self.url = url
            self.timeoutSeconds = timeoutSeconds
            self.grouping = grouping
        }
    }

    public init(file: String?, pushgateway: Pushgateway?) {
        self.file = file
        self.pushgateway = pushgateway
    }

    /// The textfile alone.
    public static func file(_ path: String) -> MetricsTarget { MetricsTarget(file: path, pushgateway: nil) }

    /// The file a command names and the configuration's Pushgateway, if any.
    public static func configured(file: String?, _ configuration: ClawbackConfiguration, grouping: [String: String] = [:]) -> MetricsTarget {
        MetricsTarget(
            file: file,
            pushgateway: configuration.metrics.pushgatewayURL.map {
                Pushgateway(url: $0, timeoutSeconds: configuration.metrics.pushTimeoutSeconds, grouping: grouping)
            })
    }

    public var isEmpty: Bool { file == nil && pushgateway == nil }

    /// A positive value of the unlabelled metric `name` in the textfile, if there is one (the Pushgateway
    /// keeps its own: what a push leaves out stays).
    func previousValue(_ name: String) -> Double? { file.flatMap { MetricsFile.previousValue(name, in: $0) } }

    /// What could not be delivered: the file, the push, or both (the job's own outcome stands).
    public struct NotDelivered: Error, Sendable, CustomStringConvertible {
        public var problems: [String]
        public var description: String { problems.joined(separator: "; ") }
    }

    /// Writes `lines` (a complete exposition, each series with its HELP and TYPE) to the file and pushes them
    /// as group `job`; when `succeeded` is false the push leaves out the last-success series.
    public func deliver(_ lines: [String], job: String, succeeded: Bool) async throws(NotDelivered) {
        var problems: [String] = []
        if let file {
            do {
                try AtomicFile.write(Array((lines.joined(separator: "\n") + "\n").utf8), to: file)
            } catch {
                problems.append("the metrics file \(file) could not be written: \(error)")
            }
        }
        if let pushgateway {
            let pushed = succeeded ? lines : lines.filter { !Self.isLastSuccess($0) }
            if let problem = await Self.push(pushed, job: job, to: pushgateway) { problems.append(problem) }
        }
        guard problems.isEmpty else { throw NotDelivered(problems: problems) }
    }

    /// Whether `line` is a sample, HELP or TYPE of a `…last_success_timestamp_seconds` series.
    static func isLastSuccess(_ line: String) -> Bool {
        let words = line.split(separator: " ", maxSplits: 3)
        let name = line.hasPrefix("# ") ? (words.count > 2 ? words[2] : "") : (words.first?.split(separator: "{").first ?? "")
        return name.hasSuffix("last_success_timestamp_seconds")
    }

    /// The group's path (`/metrics/job/<job>/<label>/<value>`), each value base64url-encoded (`@base64`), as
    /// the Pushgateway reads any value, so that no value's character can break the path.
    static func groupPath(job: String, grouping: [String: String]) -> String {
        func encoded(_ value: String) -> String {
            guard !value.isEmpty else { return "=" }
            return Data(value.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        }
        let labels = [("job", job)] + grouping.sorted { $0.key < $1.key }
        return "/metrics" + labels.map { "/\($0.0)@base64/\(encoded($0.1))" }.joined()
    }

    /// Pushes `lines` to the group; nil when the Pushgateway took them, else what went wrong.
    static func push(_ lines: [String], job: String, to gateway: Pushgateway) async -> String? {
        let base = gateway.url.hasSuffix("/") ? String(gateway.url.dropLast()) : gateway.url
        let url = base + groupPath(job: job, grouping: gateway.grouping)
        let client: HTTPClient
        do {
            client = try HTTPClients.start(for: "the Pushgateway", timeout: .seconds(gateway.timeoutSeconds), http1Only: true)
        } catch {
            return "\(error)"
        }
        defer { client.shutdown() }
        do {
            let response = try await client.send(
                HTTPRequest(
                    method: .post, url: url, headers: ["Content-Type": "text/plain; version=0.0.4"],
                    body: Array((lines.joined(separator: "\n") + "\n").utf8)))
            guard (200..<300).contains(response.status) else {
                let answer = String(decoding: response.body.prefix(300), as: UTF8.self)
                return "the Pushgateway answered HTTP \(response.status) to \(url): \(answer)"
            }
            return nil
        } catch {
            return "the Pushgateway at \(url) could not be reached: \(error)"
        }
    }
}
