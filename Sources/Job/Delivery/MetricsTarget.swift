import Foundation
import HTTP
import Reports

/// Where a job's metrics go: a Prometheus textfile for node_exporter (written atomically, so a scrape never
/// reads half a file), a Prometheus Pushgateway (where nothing scrapes a batch job's machine, as on
/// Kubernetes), or both. Each job's series are its own group at the Pushgateway (`job`, the series' prefix,
/// and a sharded run's `shard`), replaced whole by each push (PUT), as the textfile is rewritten whole: a
/// series the job no longer writes is gone, never left at an old value. A job that did not succeed
/// carries its `…last_success_timestamp_seconds` over, as the textfile does from the previous file: read
/// back from the group first (0 when the group has none, so that "no success for so long" fires).
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
    package func previousValue(_ name: String) -> Double? { file.flatMap { MetricsFile.previousValue(name, in: $0) } }

    /// What could not be delivered: the file, the push, or both (the job's own outcome stands).
    public struct NotDelivered: Error, Sendable, CustomStringConvertible {
        public var problems: [String]
        public var description: String { problems.joined(separator: "; ") }
    }

    /// Writes `lines` (a complete exposition, each series with its HELP and TYPE) to the file and pushes them
    /// as group `job`; when `succeeded` is false the push carries the group's own last success over.
    public func deliver(_ lines: [String], job: String, succeeded: Bool) async throws(NotDelivered) {
        var problems: [String] = []
        if let file {
            do {
                try AtomicFile.write(Array((lines.joined(separator: "\n") + "\n").utf8), to: file)
            } catch {
                problems.append("the metrics file \(file) could not be written: \(error)")
            }
        }
        if let pushgateway, let problem = await Self.push(lines, job: job, succeeded: succeeded, to: pushgateway) { problems.append(problem) }
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

    /// Pushes `lines` as the group's whole content; nil when the Pushgateway took them, else what went
    /// wrong. When the job did not succeed, its last-success sample is first set to the group's own (0 when
    /// the group has none); a group that cannot be read back is not pushed, so a push never resets it.
    static func push(_ lines: [String], job: String, succeeded: Bool, to gateway: Pushgateway) async -> String? {
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
            var pushed = lines
            if !succeeded {
                let exposition = try await client.send(HTTPRequest(url: base + "/metrics"))
                guard exposition.status == 200 else {
                    return "the Pushgateway answered HTTP \(exposition.status) to GET \(base)/metrics: nothing pushed, its last success kept"
                }
                let labels = gateway.grouping.merging(["job": job, "instance": gateway.grouping["instance"] ?? ""]) { $1 }
                pushed = carryingOver(lines, from: String(decoding: exposition.body, as: UTF8.self), group: labels)
            }
            let response = try await client.send(
                HTTPRequest(
                    method: .put, url: url, headers: ["Content-Type": "text/plain; version=0.0.4"],
                    body: Array((pushed.joined(separator: "\n") + "\n").utf8)))
            guard (200..<300).contains(response.status) else {
                let answer = String(decoding: response.body.prefix(300), as: UTF8.self)
                return "the Pushgateway answered HTTP \(response.status) to \(url): \(answer)"
            }
            return nil
        } catch {
            return "the Pushgateway at \(base) could not be reached: \(error)"
        }
    }

    /// `lines` with each unlabelled last-success sample's value replaced by the group's own in `exposition`
    /// (the Pushgateway's `/metrics`), or 0 when the group has none.
    static func carryingOver(_ lines: [String], from exposition: String, group: [String: String]) -> [String] {
        lines.map { line in
            guard !line.hasPrefix("#"), isLastSuccess(line), let name = line.split(separator: " ").first else { return line }
            let kept = exposition.split(separator: "\n").first { sample in
                guard sample.hasPrefix(name + "{"), let close = sample.lastIndex(of: "}") else { return false }
                return labels(sample[sample.index(sample.startIndex, offsetBy: name.count + 1)..<close]) == group
            }
            let value = kept.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
            return "\(name) " + String(format: "%.0f", value ?? 0)
        }
    }

    /// The labels of a sample's `{…}` (without the braces): `a="1",b="x\"y"`.
    static func labels(_ text: Substring) -> [String: String] {
        var labels: [String: String] = [:]
        var rest = text[...]
        while let equals = rest.firstIndex(of: "=") {
            let name = rest[..<equals].trimmingCharacters(in: CharacterSet(charactersIn: ", "))
            var index = rest.index(after: equals)
            guard index < rest.endIndex, rest[index] == "\"" else { break }
            index = rest.index(after: index)
            var value = ""
            while index < rest.endIndex, rest[index] != "\"" {
                if rest[index] == "\\", rest.index(after: index) < rest.endIndex {
                    index = rest.index(after: index)
                    value.append(rest[index] == "n" ? "\n" : rest[index])
                } else {
                    value.append(rest[index])
                }
                index = rest.index(after: index)
            }
            labels[name] = value
            rest = index < rest.endIndex ? rest[rest.index(after: index)...] : ""
        }
        return labels
    }
}
