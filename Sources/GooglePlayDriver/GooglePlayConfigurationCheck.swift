import Foundation
import GooglePlay
import HTTP
import Job
import Logging
import Storage

/// `clawback config check`'s Google Play lines: each app's service account reads what the runs read (and
/// may answer chargeback reviews when notifications are on), and the notifications' subscription can be
/// pulled. Nothing is changed and no message is taken.
enum GooglePlayConfigurationCheck {
    typealias Line = ConfigurationCheck.Line

    static func lines(
        _ configuration: ClawbackConfiguration, http: HTTPClient, database: DatabaseConfiguration, logger: Logger
    ) async -> [Line] {
        await apps(configuration, http: http) + notifications(configuration, database: database, http: http, logger: logger)
    }

    /// Per Google Play app: its service account's key loads (mode, account), Google gives it a token, the
    /// app's voided purchases of the last hour can be read (the feed the sweep reads, with the permission,
    /// "View financial data", it needs), and so can its orders (an order id no purchase has: Google's 404
    /// `notFound` says the monthly run's calls are allowed). Reading changes nothing.
    static func apps(_ configuration: ClawbackConfiguration, http: HTTPClient) async -> [Line] {
        var lines: [Line] = []
        for (index, app) in configuration.googleApps.enumerated() {
            let field = "google_apps[\(index)].service_account_key_file"
            let key: ServiceAccountKey
            do {
                key = try GooglePlayAppsFactory.key(index, configuration)
                let mode = SecretFile.mode(of: app.serviceAccountKeyFile)
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

    /// `google.notifications`: the subscription can be pulled by its service account (Pub/Sub's
    /// `testIamPermissions`, which takes no message), and what arrived so far: the last test notification
    /// and the messages kept for a person.
    static func notifications(
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
}
