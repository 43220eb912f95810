import Foundation
public import HTTP
public import Logging
public import Storage

/// `clawback config check`: everything a run needs, tried without changing anything, one line per item.
public enum ConfigurationCheck {
    public enum Status: String, Sendable {
        case ok = "ok"
        case warning = "warn"
        case failed = "FAIL"
    }

    public struct Line: Sendable, Equatable {
        /// What was checked: a configuration field where there is one (`apps[0].key_file`).
        public var item: String
        public var status: Status
        public var detail: String

        public init(item: String, status: Status, detail: String) {
            self.item = item
            self.status = status
            self.detail = detail
        }
    }

    /// Some item failed (78); the lines were shown first.
    public struct Failed: ExitStatusCarrying {
        public let problems: Int
        public var exitStatus: ExitStatus { .configuration }
        public var description: String { "\(problems) problem(s) in the configuration" }
    }

    /// The whole command: loads the configuration (every problem with the file is a failed line), checks
    /// everything else with its own short-timeout HTTP client, and returns the table, then `Failed` (78) when
    /// any item failed.
    public static func run(
        loading load: () throws(ConfigurationErrors) -> ClawbackConfiguration, database: DatabaseTarget, logger: Logger
    ) async -> CommandOutput {
        let lines: [Line]
        do {
            let configuration = try load()
            // One client for the stores' probes, each answer in at most 15 seconds (a store needing its own
            // TLS settings starts its own).
            let http = try HTTPClients.start(for: "the checks", timeout: .seconds(15))
            defer { http.shutdown() }
            lines = await run(configuration, database: database.configuration(configuration.database), http: http, logger: logger)
        } catch let errors as ConfigurationErrors {
            lines = errors.errors.map { Line(item: $0.field, status: .failed, detail: $0.problem) }
        } catch {
            lines = [Line(item: "HTTP client", status: .failed, detail: "\(error)")]
        }
        let failed = lines.filter { $0.status == .failed }.count
        let table = TextTable.render(lines.map { [$0.item, $0.status.rawValue, $0.detail] })
        return CommandOutput(
            [table, failed == 0 ? "configuration is fine" : "\(failed) problem(s)"], failure: failed == 0 ? nil : Failed(problems: failed))
    }

    public static func run(
        _ configuration: ClawbackConfiguration, database: DatabaseConfiguration, http: HTTPClient, logger: Logger
    ) async -> [Line] {
        var lines = [Line(item: "configuration", status: .ok, detail: configuration.sourcePath.map { "read \($0)" } ?? "no file: defaults")]
        lines += files(configuration)
        lines += checkDatabase(configuration, database: database, logger: logger)
        if let url = configuration.metrics.pushgatewayURL { lines.append(await checkPushgateway(url, http: http)) }
        for driver in StoreDrivers.all {
            lines += await driver.checkConfiguration(configuration, http: http, database: database, logger: logger)
        }
        return lines
    }

    static func files(_ configuration: ClawbackConfiguration) -> [Line] {
        var lines: [Line] = []
        if StoreDrivers.all.allSatisfy({ $0.apps(in: configuration).isEmpty }) {
            let sections = StoreDrivers.all.flatMap(\.configurationKeys).sorted().joined(separator: ", ")
            lines.append(Line(item: "apps", status: .failed, detail: "no app or shop configured: add one to a store's section (\(sections))"))
        }
        lines.append(writable(directory: configuration.reports.directory, item: "reports.directory"))
        if let metrics = configuration.run.metricsFile {
            lines.append(writable(directory: URL(fileURLWithPath: metrics).deletingLastPathComponent().path, item: "run.metrics_file"))
        }
        return lines
    }

    /// The Pushgateway answers that it is ready (`GET /-/ready`); nothing is pushed.
    static func checkPushgateway(_ url: String, http: HTTPClient) async -> Line {
        let ready = (url.hasSuffix("/") ? String(url.dropLast()) : url) + "/-/ready"
        do {
            let response = try await http.send(HTTPRequest(url: ready))
            guard response.status == 200 else {
                return Line(item: "metrics.pushgateway_url", status: .failed, detail: "\(ready) answered HTTP \(response.status)")
            }
            return Line(item: "metrics.pushgateway_url", status: .ok, detail: "\(url) ready")
        } catch {
            return Line(item: "metrics.pushgateway_url", status: .failed, detail: "\(ready) could not be reached: \(error)")
        }
    }

    /// A directory clawback can write to, or the nearest existing parent it could create it in.
    public static func writable(directory: String, item: String) -> Line {
        var candidate = URL(fileURLWithPath: directory)
        var isDirectory: ObjCBool = false
        while !FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory) && candidate.path != "/" {
            candidate.deleteLastPathComponent()
        }
        guard isDirectory.boolValue else { return Line(item: item, status: .failed, detail: "\(candidate.path) is not a directory") }
        guard access(candidate.path, W_OK) == 0 else { return Line(item: item, status: .failed, detail: "\(candidate.path) is not writable") }
        let created = candidate.path == URL(fileURLWithPath: directory).path ? "" : " (will be created)"
        return Line(item: item, status: .ok, detail: "\(directory) writable\(created)")
    }

    static func checkDatabase(_ configuration: ClawbackConfiguration, database: DatabaseConfiguration, logger: Logger) -> [Line] {
        let connection: DatabaseConnection
        do {
            connection = try DatabaseConnection.open(database, logger: logger)
        } catch {
            if let refused = DatabaseError(error), case .permissionDenied = refused.kind {
                return [Line(item: "database", status: .failed, detail: "refused: \(refused)")]
            }
            return [Line(item: "database", status: .failed, detail: "unreachable: \(error)")]
        }
        var lines: [Line] = []
        do {
            let server = try connection.serverIdentity()
            lines.append(
                Line(item: "database", status: .ok, detail: "PostgreSQL \(server.version), database \(server.database) as \(server.user)"))
            let statuses = try Migrator(logger: logger).status(on: connection)
            let pending = statuses.filter { $0.state == .pending }.map { String(format: "%04d", $0.version) }
            let broken = statuses.filter { $0.state == .changed || $0.state == .unknown }.map {
                String(format: "%04d %@", $0.version, $0.state.rawValue)
            }
            if !broken.isEmpty {
                lines.append(Line(item: "migrations", status: .failed, detail: broken.joined(separator: ", ") + ": see clawback migrate --status"))
            } else if !pending.isEmpty {
                lines.append(Line(item: "migrations", status: .failed, detail: "pending \(pending.joined(separator: ", ")): run clawback migrate"))
            } else {
                lines.append(Line(item: "migrations", status: .ok, detail: "all \(statuses.count) applied"))
                let settings = configuration.tailWindowSettings
                let same = try settings.isApplied(on: connection)
                lines.append(
                    Line(
                        item: "tail_window", status: same ? .ok : .warning,
                        detail: same
                            ? "clawback.settings match: \(settings.acceptanceWindowDays) days accepted, \(settings.grantRetentionMonths) months kept"
                            : "clawback.settings differ from the configuration: the next migrate, run or prune writes them"))
            }
        } catch {
            // Classified, so that a privilege the role lacks is named as one.
            lines.append(Line(item: "database", status: .failed, detail: "\(DatabaseError(error).map { "\($0)" } ?? "\(error)")"))
        }
        return lines
    }
}
