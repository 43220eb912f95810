import Foundation
import HTTP
import Spawning

/// A Prometheus Pushgateway of one test's own: Debian's `prometheus-pushgateway`, as the test script installs
/// it, on a free loopback port, nothing persisted. Its series are read back as Prometheus would scrape them.
/// Started with posix_spawn (`SpawnedChild`): it lives for a whole test and must not keep other tests'
/// descriptors.
public final class TestPushgateway: @unchecked Sendable {
    public let port: Int
    let child: SpawnedChild

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    static let binary = "/usr/bin/prometheus-pushgateway"

    public static func start() async throws -> TestPushgateway {
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw Failure(description: "no \(binary): run the suite through Jobs/local/test.sh, which installs prometheus-pushgateway")
        }
        var tried: [String] = []
        for _ in 0..<10 {
            let port = Int.random(in: 20_000..<60_000)
            let child = try SpawnedChild(
                [binary, "--web.listen-address=127.0.0.1:\(port)", "--persistence.file=", "--log.level=error"],
                environment: ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }, standardOutput: .discarded)
            let gateway = TestPushgateway(port: port, child: child)
            // Ready once it answers; a port already taken ends the child at once.
            for _ in 0..<100 {
                if child.poll() != nil { break }
                if (try? await gateway.get("/-/ready").status) == 200 { return gateway }
                try await Task.sleep(for: .milliseconds(50))
            }
            tried.append("port \(port): \(child.poll().map { "\($0)" } ?? "not ready in 5 s")")
            gateway.stop()
        }
        throw Failure(description: "the Pushgateway did not start: \(tried.joined(separator: "; "))")
    }

    init(port: Int, child: SpawnedChild) {
        self.port = port
        self.child = child
    }

    public var url: String { "http://127.0.0.1:\(port)" }

    public func stop() {
        if child.poll() == nil { kill(child.pid, SIGTERM) }
        _ = child.wait()
    }

    func get(_ path: String) async throws -> (status: Int, body: String) {
        let http = try HTTPClient(configuration: .init(timeout: .seconds(5), protocolPreference: .http1))
        defer { http.shutdown() }
        let response = try await http.send(HTTPRequest(url: url + path))
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    /// Every sample the Pushgateway exposes whose name starts with `prefix` (its own series aside), by series
    /// name with its sorted labels, as `name{a="1",b="2"}`.
    public func samples(prefix: String = "clawback_") async throws -> [String: Double] {
        let (status, body) = try await get("/metrics")
        guard status == 200 else { throw Failure(description: "GET /metrics answered \(status)") }
        var samples: [String: Double] = [:]
        for line in body.split(separator: "\n") where !line.hasPrefix("#") && line.hasPrefix(prefix) {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }
}
