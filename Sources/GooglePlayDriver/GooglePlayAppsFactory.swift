import Foundation
public import GooglePlay
public import HTTP
import Job

/// Google Play's clients for the configured apps: each app's service account key read under the secret-file
/// rule, its token requests sent where the configuration says.
enum GooglePlayAppsFactory {
    /// The key of `googleApps[index]`; a problem names the field.
    static func key(_ index: Int, _ configuration: ClawbackConfiguration) throws(ConfigurationErrors) -> ServiceAccountKey {
        try key(at: configuration.googleApps[index].serviceAccountKeyFile, field: "google_apps[\(index)].service_account_key_file", configuration)
    }

    /// The service account key at `path` (a secret file), asking tokens at `google.token_url` when set.
    static func key(at path: String, field: String, _ configuration: ClawbackConfiguration) throws(ConfigurationErrors) -> ServiceAccountKey {
        let text = try SecretFile.text(path, field: field)
        do {
            let key = try ServiceAccountKey(json: Data(text.utf8), source: path)
            return configuration.google.tokenURL.map(key.askingTokens(at:)) ?? key
        } catch {
            throw ConfigurationErrors(errors: [ConfigurationError(field: field, problem: error.description)])
        }
    }

    /// The key that pulls Google's notifications: `google.notifications.service_account_key_file`, else the
    /// first Google app's.
    static func notificationsKey(_ configuration: ClawbackConfiguration) throws(ConfigurationErrors) -> ServiceAccountKey {
        if let path = configuration.google.notifications?.serviceAccountKeyFile {
            return try key(at: path, field: "google.notifications.service_account_key_file", configuration)
        }
        guard !configuration.googleApps.isEmpty else {
            throw ConfigurationErrors(errors: [
                ConfigurationError(field: "google.notifications.service_account_key_file", problem: "is required when no google_apps are configured")
            ])
        }
        return try key(0, configuration)
    }

    /// One run's Orders API budget and pace, as configured.
    static func callAllowance(_ configuration: ClawbackConfiguration) -> CallAllowance {
        CallAllowance(budget: configuration.google.ordersCallBudget, perSecond: configuration.google.ordersCallsPerSecond)
    }

    /// Every configured app's Orders API client, each with its own token, on `http`, all within one run's
    /// call budget and pace (`google.orders_call_budget`, `google.orders_calls_per_second`).
    static func orders(_ configuration: ClawbackConfiguration, http: HTTPClient, allowance: CallAllowance? = nil) throws(ConfigurationErrors)
        -> GooglePlayApps
    {
        let allowance = allowance ?? callAllowance(configuration)
        var clients: [String: OrdersClient] = [:]
        var errors: [ConfigurationError] = []
        for (index, app) in configuration.googleApps.enumerated() {
            do {
                let key = try key(index, configuration)
                clients[app.packageName] = OrdersClient(
                    packageName: app.packageName, baseURL: configuration.google.apiURL, tokens: AccessTokenProvider(key: key, http: http),
                    http: http, allowance: allowance)
            } catch {
                errors += error.errors
            }
        }
        guard errors.isEmpty else { throw ConfigurationErrors(errors: errors) }
        return GooglePlayApps(orders: clients)
    }
}

/// The Google Play apps a run can ask about: an Orders API client per package name.
public struct GooglePlayApps: Sendable {
    public var orders: [String: OrdersClient]

    public init(orders: [String: OrdersClient]) { self.orders = orders }

    public var statistics: GoogleCallStatistics { .total(orders.values.map(\.statistics)) }
}
