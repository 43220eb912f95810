import AppStore
import Foundation
import GooglePlay
public import HTTP
public import Logging
public import Storage
import X509

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
            // One client for every store's probe, each answer in at most 15 seconds.
            let http = try HTTPClients.start(
                for: "the checks", timeout: .seconds(min(15, Int64(configuration.apple.timeoutSeconds))),
                extraCABundlePath: configuration.apple.extraCAFile)
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
        lines += await apple(configuration, http: http, logger: logger)
        lines += await googlePlay(configuration, http: http)
        lines += await googleNotifications(configuration, database: database, http: http, logger: logger)
        for driver in StoreDrivers.all { lines += await driver.checkConfiguration(configuration, http: http) }
        return lines
    }

    /// `google.notifications`: the subscription can be pulled by its service account (Pub/Sub's
    /// `testIamPermissions`, which takes no message), and what arrived so far: the last test notification
    /// and the messages kept for a person.
    static func googleNotifications(
        _ configuration: ClawbackConfiguration, database: DatabaseConfiguration, http: HTTPClient, logger: Logger
    ) async -> [Line] {
        guard let settings = configuration.google.notifications else { return [] }
        let item = "google.notifications \(settings.subscription)"
        let key: ServiceAccountKey
        do {
            key = try GooglePlayAppsFactory.notificationsKey(configuration)
        } catch {
            return error.errors.map { Line(item: $0.field, status: .failed, detail: $0.problem) }
        }
        let client = PubSubClient(
            subscription: settings.subscription, baseURL: settings.pubsubURL,
            tokens: AccessTokenProvider(key: key, http: http, scopes: PubSubScope.pubsub), http: http, retries: 0)
        if let refused = await client.checkAccess() {
            let hint = if case .refused(404, _) = refused.kind { ": no such subscription in this project" } else { "" }
            return [Line(item: item, status: .failed, detail: "\(refused)\(hint)")]
        }
        var lines = [Line(item: item, status: .ok, detail: "\(key.clientEmail) may pull from it (no message taken)")]
        guard let connection = try? DatabaseConnection.open(database, logger: logger),
            let health = try? GoogleNotificationStore.health(on: connection)
        else { return lines }
        let format = Date.ISO8601FormatStyle()
        lines.append(
            Line(
                item: "google.notifications received", status: health.keptUnread > 0 ? .warning : .ok,
                detail: (health.lastTest.map { "last test notification \($0.formatted(format))" } ?? "no test notification received yet")
                    + (health.keptUnread > 0 ? "; \(health.keptUnread) messages kept for a person (clawback.google_notifications)" : "")))
        return lines
    }

    /// Whether the account may answer the app's chargeback reviews (`clawback google-play notifications`), by
    /// `OrdersClient.checkAnswering`'s probe, which no review can take.
    static func answering(_ orders: OrdersClient, item: String, account: String) async -> Line {
        let item = item + " answering"
        switch await orders.checkAnswering() {
        case .notRefused:
            // Not proof: Google does not document that it checks the permission before it looks for the order.
            return Line(
                item: item, status: .warning,
                detail:
                    "\(account) was not refused: orders.reviewrefund for an order no purchase has (nothing can take it) came back 'no such order'. Google does not document that it checks \"Manage orders and subscriptions\" first, so this is no proof; a refused answer is sent again until the deadline and counted in reviews_not_taken"
            )
        case .refused(_, let why):
            return Line(
                item: item, status: .failed,
                detail:
                    "\(why): grant the service account \"Manage orders and subscriptions\" for this app in the Play Console, or every answer is refused"
            )
        case .unproven(let why):
            return Line(item: item, status: .warning, detail: "cannot be proved now (\(why)); the answers themselves will say")
        }
    }

    static func files(_ configuration: ClawbackConfiguration) -> [Line] {
        var lines: [Line] = []
        if configuration.apps.isEmpty && configuration.googleApps.isEmpty {
            lines.append(Line(item: "apps", status: .failed, detail: "no app configured: add one under apps (or google_apps)"))
        } else if configuration.apps.isEmpty {
            lines.append(
                Line(
                    item: "apps", status: .warning,
                    detail: "no App Store app: only the Google Play runs (--strategy google-orders) have grants to check"))
        }
        for (index, app) in configuration.apps.enumerated() {
            if let path = app.sharedSecretFile {
                do {
                    _ = try SecretFile.read(path)
                    lines.append(Line(item: "apps[\(index)].shared_secret_file", status: .ok, detail: "\(path) readable by its owner only"))
                } catch {
                    lines.append(Line(item: "apps[\(index)].shared_secret_file", status: .failed, detail: error.description))
                }
            }
        }
        for (index, path) in configuration.apple.trustedRoots.enumerated() {
            do {
                let root = try AppleAppsFactory.certificate(at: path)
                lines.append(
                    Line(
                        item: "apple.trusted_roots[\(index)]", status: .warning,
                        detail: "signed data is trusted to \(root.subject) INSTEAD of Apple Root CA - G3: for the simulator only"))
            } catch {
                lines.append(Line(item: "apple.trusted_roots[\(index)]", status: .failed, detail: "cannot read a certificate from \(path)"))
            }
        }
        if let path = configuration.apple.extraCAFile {
            let readable = FileManager.default.isReadableFile(atPath: path)
            lines.append(Line(item: "apple.extra_ca_file", status: readable ? .ok : .failed, detail: readable ? path : "cannot read \(path)"))
        }
        lines.append(writable(directory: configuration.reports.directory, item: "reports.directory"))
        if let metrics = configuration.run.metricsFile {
            lines.append(writable(directory: URL(fileURLWithPath: metrics).deletingLastPathComponent().path, item: "run.metrics_file"))
        }
        return lines
    }

    /// A directory clawback can write to, or the nearest existing parent it could create it in.
    static func writable(directory: String, item: String) -> Line {
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

    /// Per app: its key loads, and Apple (or the simulator) answers a cheap authenticated request. Asking
    /// for a transaction that cannot exist costs nothing: any answer but 401 proves the credentials.
    static func apple(_ configuration: ClawbackConfiguration, http: HTTPClient, logger: Logger) async -> [Line] {
        var lines: [Line] = []
        let limiter = RateLimiter(rates: .init(overrides: [:], shardCount: 1))
        let server = AppleAppsFactory.server(configuration)
        for (index, app) in configuration.apps.enumerated() {
            let client: AppStoreServerAPIClient
            do {
                client = try AppleAppsFactory.client(for: app, server: server, http: http, limiter: limiter, logger: logger)
                let mode = try? CredentialFile.permissions(of: app.keyFile).map { String($0, radix: 8) }.get()
                lines.append(Line(item: "apps[\(index)].key_file", status: .ok, detail: "\(app.keyFile): P-256 key, mode \(mode ?? "?")"))
            } catch {
                lines.append(Line(item: "apps[\(index)].key_file", status: .failed, detail: error.description))
                continue
            }
            let environment: AppStoreEnvironment = app.environment == "Sandbox" ? .sandbox : .production
            let item = "apps[\(index)] \(app.bundleID) (\(app.environment))"
            do {
                _ = try await client.transactionInfo("1", environment: environment)
                lines.append(Line(item: item, status: .ok, detail: "Apple answered with the app's key"))
            } catch {
                switch error.kind {
                case .apple(let status, let code, _):
                    lines.append(
                        Line(
                            item: item, status: .ok,
                            detail: "authenticated; Apple answered \(status)\(code.map { " \($0)" } ?? "") for a transaction that does not exist"))
                case .unauthorized:
                    lines.append(
                        Line(
                            item: item, status: .failed,
                            detail:
                                "401: Apple refused the token: check issuer_id, key_id, bundle_id and that the key is an In-App Purchase key of this app"
                        ))
                default:
                    lines.append(Line(item: item, status: .failed, detail: "\(error)"))
                }
            }
        }
        return lines
    }

    /// Per Google Play app: its service account's key loads (mode, account), Google gives it a token, the
    /// app's voided purchases of the last hour can be read (the feed the sweep reads, with the permission,
    /// "View financial data", it needs), and so can its orders (an order id no purchase has: Google's 404
    /// `notFound` says the monthly run's calls are allowed). Reading changes nothing.
    static func googlePlay(_ configuration: ClawbackConfiguration, http: HTTPClient) async -> [Line] {
        var lines: [Line] = []
        for (index, app) in configuration.googleApps.enumerated() {
            let field = "google_apps[\(index)].service_account_key_file"
            let key: ServiceAccountKey
            do {
                key = try GooglePlayAppsFactory.key(index, configuration)
                let mode = try? CredentialFile.permissions(of: app.serviceAccountKeyFile).map { String($0, radix: 8) }.get()
                lines.append(Line(item: field, status: .ok, detail: "\(app.serviceAccountKeyFile): \(key.clientEmail), mode \(mode ?? "?")"))
            } catch {
                lines += error.errors.map { Line(item: $0.field, status: .failed, detail: $0.problem) }
                continue
            }
            let item = "google_apps[\(index)] \(app.packageName)"
            let tokens = AccessTokenProvider(key: key, http: http)
            do {
                _ = try await tokens.token()
            } catch {
                lines.append(Line(item: item, status: .failed, detail: "no token for \(key.clientEmail): \(error)"))
                continue
            }
            let feed = VoidedPurchasesClient(
                packageName: app.packageName, baseURL: configuration.google.apiURL, tokens: tokens, http: http, retries: 0)
            do {
                let voids = try await feed.voids(from: Date() - 3_600)
                let orders = OrdersClient(
                    packageName: app.packageName, baseURL: configuration.google.apiURL, tokens: tokens, http: http, retries: 0)
                if let refused = await orders.checkAccess() { throw refused }
                lines.append(
                    Line(
                        item: item, status: .ok,
                        detail: "token for \(key.clientEmail); voided purchases readable (\(voids.rows.count) in the last hour); orders readable"))
                if configuration.google.notifications != nil { lines.append(await answering(orders, item: item, account: key.clientEmail)) }
            } catch let error as GooglePlayError {
                let hint =
                    switch error.kind {
                    case .refused(401, "permissionDenied"), .refused(403, _):
                        ": grant the service account \"View financial data, orders, and cancellation survey responses\" for this app in the Play Console"
                    case .refused(404, "applicationNotFound"): ": no app of this package name on Google Play for this account"
                    default: ""
                    }
                lines.append(Line(item: item, status: .failed, detail: "\(error)\(hint)"))
            } catch {
                lines.append(Line(item: item, status: .failed, detail: "\(error)"))
            }
        }
        return lines
    }
}
