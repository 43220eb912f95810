import Foundation
public import Reconciliation

/// `google` and `google_apps`: Google Play's API, and each app (package name) with the service account that
/// reads it, for Google Play's runs and sweep; `config check` proves each app's credentials and permission.
extension ClawbackConfiguration {
    public struct GooglePlay: Sendable, Equatable {
        /// The Play Developer API's base URL (the simulator's for rehearsals).
        public var apiURL = "https://androidpublisher.googleapis.com"
        /// Where tokens are asked instead of each key file's `token_uri` (the simulator's for rehearsals).
        public var tokenURL: String?
        /// One call's timeout, within `timeoutRange`.
        public var timeoutSeconds = 30.0
        /// Orders API calls one run may send (all apps, retries included): a quarter of the project's default
        /// daily quota of 200,000, which the game's own purchase checks may share. Orders left unasked when it
        /// is spent are unverified, and the next run asks them.
        public var ordersCallBudget = 50_000
        /// Orders API calls a second at most: under Google's 3,000 a minute per bucket, where that applies.
        public var ordersCallsPerSecond = 40.0
        /// A refund made without revoking the purchase (a Play Console refund without revoke, a support agent's
        /// goodwill): left with the player by default, as the studio's agent chose.
        public var refundWithoutRevoke: RefundRule = .leave
        /// A partial refund by amount: the amount's share of the units taken back by default.
        public var amountRefunds: RefundRule = .takeBack
        /// The Pub/Sub subscription Google Play's real-time notifications are read from, when set up.
        public var notifications: GoogleNotifications?
    }

    public struct GoogleApp: Sendable, Equatable {
        /// The app's package name, e.g. com.studio.game.
        public var packageName: String
        /// The service account's JSON key, readable by no one but its owner and group (0600, 0640, 0440).
        public var serviceAccountKeyFile: String
        /// How its chargeback reviews are answered: samples offered, and since when its grants are complete.
        public var refundRequests = AppRefundRequests()
    }

    static func parseGooglePlay(
        _ root: ConfigNode, into configuration: inout ClawbackConfiguration, errors: inout [ConfigurationError], resolve: (String?) -> String?
    ) {
        let google = root.child("google")
        google.rejectUnknownKeys(
            [
                "api_url", "token_url", "timeout_seconds", "orders_call_budget", "orders_calls_per_second", "refund_without_revoke", "amount_refunds",
                "notifications",
            ],
            into: &errors)
        parseGoogleNotifications(google.child("notifications"), into: &configuration, errors: &errors, resolve: resolve)
        for (key, keyPath) in [("refund_without_revoke", \GooglePlay.refundWithoutRevoke), ("amount_refunds", \GooglePlay.amountRefunds)] {
            guard let text = google.child(key).string(into: &errors) else { continue }
            if let rule = RefundRule(rawValue: text) {
                configuration.google[keyPath: keyPath] = rule
            } else {
                errors.append(
                    ConfigurationError(
                        field: "google.\(key)", problem: "is \"\(text)\"; expected \(RefundRule.allCases.map(\.rawValue).joined(separator: ", "))"))
            }
        }
        if let url = google.child("api_url").string(into: &errors) { configuration.google.apiURL = url }
        configuration.google.tokenURL = google.child("token_url").string(into: &errors)
        if let timeout = google.child("timeout_seconds").double(into: &errors) {
            if GooglePlay.timeoutRange.contains(timeout) {
                configuration.google.timeoutSeconds = timeout
            } else {
                errors.append(
                    ConfigurationError(
                        field: "google.timeout_seconds",
                        problem:
                            "is \(timeout); must be from \(Int(GooglePlay.timeoutRange.lowerBound)) to \(Int(GooglePlay.timeoutRange.upperBound)) seconds (a chargeback answer's tries must end within the 5 minutes kept before Google's deadline)"
                    ))
            }
        }
        if let budget = google.child("orders_call_budget").int(into: &errors) {
            if budget > 0 {
                configuration.google.ordersCallBudget = budget
            } else {
                errors.append(ConfigurationError(field: "google.orders_call_budget", problem: "must be positive"))
            }
        }
        if let pace = google.child("orders_calls_per_second").double(into: &errors) {
            if pace > 0 {
                configuration.google.ordersCallsPerSecond = pace
            } else {
                errors.append(ConfigurationError(field: "google.orders_calls_per_second", problem: "must be positive"))
            }
        }
        for node in root.child("google_apps").list(into: &errors) {
            node.rejectUnknownKeys(
                ["package_name", "service_account_key_file", "service_account_key", "private_key", "refund_requests"], into: &errors)
            for secret in ["service_account_key", "private_key"] where node.child(secret).isPresent {
                errors.append(
                    ConfigurationError(
                        field: "\(node.path).\(secret)", problem: "secrets are never written in the configuration; use service_account_key_file"))
            }
            let package = node.child("package_name").string(into: &errors) ?? ""
            let key = resolve(node.child("service_account_key_file").string(into: &errors)) ?? ""
            if package.isEmpty { errors.append(ConfigurationError(field: "\(node.path).package_name", problem: "is required")) }
            if key.isEmpty { errors.append(ConfigurationError(field: "\(node.path).service_account_key_file", problem: "is required")) }
            if !package.isEmpty, configuration.googleApps.contains(where: { $0.packageName == package }) {
                errors.append(ConfigurationError(field: "\(node.path).package_name", problem: "\(package) is configured twice"))
            }
            var app = GoogleApp(packageName: package, serviceAccountKeyFile: key)
            let answering = node.child("refund_requests")
            if answering.isPresent {
                parseAppRefundRequests(answering, into: &app.refundRequests, errors: &errors)
                if answering.child("customer_consented").isPresent {
                    errors.append(
                        ConfigurationError(
                            field: "\(answering.path).customer_consented",
                            problem: "is Apple's: Google asks no consent for a chargeback review's answer"))
                }
            }
            configuration.googleApps.append(app)
        }
    }
}

extension ClawbackConfiguration.GooglePlay {
    /// A call's timeout, in seconds: at least one, at most 45, so that a chargeback answer's three tries, their
    /// pauses, and a fresh token after a 401 with the try it allows (6 × 45 s + 1.5 s) end within the 5 minutes
    /// kept before Google's 24-hour deadline (`GoogleNotificationStore.sendingMargin`).
    public static let timeoutRange: ClosedRange<Double> = 1...45

    /// `timeoutSeconds` as the HTTP client takes it, to the millisecond.
    package var timeout: Duration { .milliseconds(Int64((timeoutSeconds * 1000).rounded())) }
}
