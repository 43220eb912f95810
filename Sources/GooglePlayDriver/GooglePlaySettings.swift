import GooglePlay
public import Job
public import Reconciliation

/// `google` and `google_apps`: Google Play's API, and each app (package name) with the service account that
/// reads it, for Google Play's runs and sweep; `google.notifications`, the Pub/Sub subscription its
/// real-time notifications reach. `config check` proves each app's credentials and permission.
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

    /// `google.notifications`: the Cloud Pub/Sub pull subscription on the topic the Play Console publishes the
    /// apps' real-time developer notifications to, read hourly by `clawback google-play notifications`.
    public struct GoogleNotifications: Sendable, Equatable {
        /// `projects/{project}/subscriptions/{subscription}`.
        public var subscription: String
        /// The service account that pulls (Pub/Sub Subscriber on the subscription); nil: the first Google app's.
        public var serviceAccountKeyFile: String?
        /// Pub/Sub's base URL (the simulator's for rehearsals).
        public var pubsubURL = "https://pubsub.googleapis.com"
        /// Messages one run reads at most: the rest wait in the subscription for the next run.
        public var maximumMessagesPerRun = 100_000
        public var metricsFile: String?
    }

    /// Google Play's API settings (`google`), as Google Play's driver read them.
    public var google: GooglePlay {
        get { googlePlay.google }
        set { googlePlay.google = newValue }
    }

    /// The Google Play apps (`google_apps`).
    public var googleApps: [GoogleApp] {
        get { googlePlay.apps }
        set { googlePlay.apps = newValue }
    }

    var googlePlay: GooglePlaySettings {
        get { settings(of: .googlePlay) as? GooglePlaySettings ?? GooglePlaySettings() }
        set { setSettings(newValue, of: .googlePlay) }
    }
}

extension ClawbackConfiguration.GooglePlay {
    /// A call's timeout, in seconds: at least one, at most 45, so that a chargeback answer's three tries, their
    /// pauses, and a fresh token after a 401 with the try it allows (6 × 45 s + 1.5 s) end within the 5 minutes
    /// kept before Google's 24-hour deadline (`GoogleNotificationStore.sendingMargin`).
    public static let timeoutRange: ClosedRange<Double> = 1...45

    /// `timeoutSeconds` as the HTTP client takes it, to the millisecond.
    var timeout: Duration { .milliseconds(Int64((timeoutSeconds * 1000).rounded())) }
}

/// Google Play's settings: its sections `google` (with `notifications`) and `google_apps`; every problem
/// named with its field (docs/configuration.md).
struct GooglePlaySettings: StoreSettings {
    var google = ClawbackConfiguration.GooglePlay()
    var apps: [ClawbackConfiguration.GoogleApp] = []

    static func read(_ file: ConfigurationSection) -> GooglePlaySettings {
        var settings = GooglePlaySettings()
        let google = file.section("google")
        google.rejectUnknownKeys([
            "api_url", "token_url", "timeout_seconds", "orders_call_budget", "orders_calls_per_second", "refund_without_revoke", "amount_refunds",
            "notifications",
        ])
        settings.google.notifications = readNotifications(google.section("notifications"))
        for (key, keyPath) in [
            ("refund_without_revoke", \ClawbackConfiguration.GooglePlay.refundWithoutRevoke),
            ("amount_refunds", \ClawbackConfiguration.GooglePlay.amountRefunds),
        ] {
            guard let text = google.string(key) else { continue }
            if let rule = RefundRule(rawValue: text) {
                settings.google[keyPath: keyPath] = rule
            } else {
                google.problem(key, "is \"\(text)\"; expected \(RefundRule.allCases.map(\.rawValue).joined(separator: ", "))")
            }
        }
        if let url = google.string("api_url") { settings.google.apiURL = url }
        settings.google.tokenURL = google.string("token_url")
        let range = ClawbackConfiguration.GooglePlay.timeoutRange
        if let timeout = google.double("timeout_seconds") {
            if range.contains(timeout) {
                settings.google.timeoutSeconds = timeout
            } else {
                google.problem(
                    "timeout_seconds",
                    "is \(timeout); must be from \(Int(range.lowerBound)) to \(Int(range.upperBound)) seconds (a chargeback answer's tries must end within the 5 minutes kept before Google's deadline)"
                )
            }
        }
        if let budget = google.int("orders_call_budget") {
            if budget > 0 { settings.google.ordersCallBudget = budget } else { google.problem("orders_call_budget", "must be positive") }
        }
        if let pace = google.double("orders_calls_per_second") {
            if pace > 0 { settings.google.ordersCallsPerSecond = pace } else { google.problem("orders_calls_per_second", "must be positive") }
        }
        for node in file.list("google_apps") {
            let app = readApp(node)
            if !app.packageName.isEmpty, settings.apps.contains(where: { $0.packageName == app.packageName }) {
                node.problem("package_name", "\(app.packageName) is configured twice")
            }
            settings.apps.append(app)
        }
        return settings
    }

    static func readApp(_ node: ConfigurationSection) -> ClawbackConfiguration.GoogleApp {
        node.rejectUnknownKeys(["package_name", "service_account_key_file", "service_account_key", "private_key", "refund_requests"])
        for secret in ["service_account_key", "private_key"] where node.section(secret).isPresent {
            node.problem(secret, "secrets are never written in the configuration; use service_account_key_file")
        }
        let package = node.string("package_name") ?? ""
        let key = node.string("service_account_key_file").flatMap { $0.isEmpty ? nil : node.filePath("service_account_key_file") } ?? ""
        if package.isEmpty { node.problem("package_name", "is required") }
        if key.isEmpty { node.problem("service_account_key_file", "is required") }
        var app = ClawbackConfiguration.GoogleApp(packageName: package, serviceAccountKeyFile: key)
        let answering = node.section("refund_requests")
        if answering.isPresent {
            app.refundRequests = node.appRefundRequests("refund_requests")
            if answering.section("customer_consented").isPresent {
                answering.problem("customer_consented", "is Apple's: Google asks no consent for a chargeback review's answer")
            }
        }
        return app
    }

    static func readNotifications(_ node: ConfigurationSection) -> ClawbackConfiguration.GoogleNotifications? {
        guard node.isPresent else { return nil }
        node.rejectUnknownKeys(["subscription", "service_account_key_file", "pubsub_url", "max_messages_per_run", "metrics_file"])
        let subscription = node.string("subscription") ?? ""
        if !PubSubClient.isSubscriptionName(subscription) {
            node.problem(
                "subscription",
                subscription.isEmpty
                    ? "is required: projects/{project}/subscriptions/{subscription}"
                    : "is \"\(subscription)\"; expected projects/{project}/subscriptions/{subscription}")
        }
        var settings = ClawbackConfiguration.GoogleNotifications(subscription: subscription)
        settings.serviceAccountKeyFile = node.filePath("service_account_key_file")
        if let url = node.string("pubsub_url") { settings.pubsubURL = url }
        if let maximum = node.int("max_messages_per_run") {
            if maximum > 0 { settings.maximumMessagesPerRun = maximum } else { node.problem("max_messages_per_run", "must be positive") }
        }
        settings.metricsFile = node.filePath("metrics_file")
        return settings
    }

    /// Its endpoints use TLS unless they are on this machine (the simulator).
    func finalProblems() -> [ConfigurationError] {
        ([("google.api_url", google.apiURL)] + (google.tokenURL.map { [("google.token_url", $0)] } ?? [])
            + (google.notifications.map { [("google.notifications.pubsub_url", $0.pubsubURL)] } ?? [])).compactMap {
                ClawbackConfiguration.transportProblem(field: $0.0, $0.1)
            }
    }
}
