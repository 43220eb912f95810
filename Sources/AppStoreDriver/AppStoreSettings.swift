public import Job
import Reconciliation

extension ClawbackConfiguration {
    /// `apple`: the App Store Server API and verifyReceipt, and how they are asked.
    public struct Apple: Sendable, Equatable {
        public var productionURL = "https://api.storekit.apple.com"
        public var sandboxURL = "https://api.storekit-sandbox.apple.com"
        public var verifyReceiptProductionURL = "https://buy.itunes.apple.com/verifyReceipt"
        public var verifyReceiptSandboxURL = "https://sandbox.itunes.apple.com/verifyReceipt"
        /// Extra CA file for TLS (a simulator behind TLS); the system's stay trusted.
        public var extraCAFile: String?
        /// Roots trusted for signed data INSTEAD of Apple Root CA - G3: only for the simulator or Apple's test CA.
        public var trustedRoots: [String] = []
        /// Requests per second per endpoint (transaction_info, transaction_history, refund_history,
        /// notification_history, look_up_order_id), overriding Apple's published rates.
        public var rateLimits: [String: Double] = [:]
        /// Verifications in flight at once.
        public var concurrency = 32
        public var timeoutSeconds = 30.0
    }

    /// One of `apps`: an App Store app and its keys.
    public struct App: Sendable, Equatable {
        public var bundleID: String
        public var appAppleID: Int64?
        /// Where the app sells: Production or Sandbox. Grants carry their own environment; this is informative.
        public var environment = "Production"
        public var issuerID: String
        public var keyID: String
        /// The In-App Purchase key (.p8), readable by its owner only.
        public var keyFile: String
        /// The App Store Connect shared secret for verifyReceipt, readable by its owner only.
        public var sharedSecretFile: String?
        /// Answering Apple's refund requests for this app.
        public var refundRequests = AppRefundRequests()
    }

    /// How `clawback refund-requests answer` reads Apple's feed: its keys of `refund_requests`.
    public struct RefundRequestFeed: Sendable, Equatable {
        /// The first run reads this far back (later runs read from their cursor).
        public var lookbackHours = 24
        /// Each run rereads this much before its cursor, so nothing Apple recorded late in its history is
        /// missed: by default 13 hours, the whole time a request can be answered (rereading costs little:
        /// a request is recorded once).
        public var overlapMinutes = 780
        /// A purchase without a grant is answered "not delivered" only this many hours after the request
        /// (the grant path may still record it: StoreKit hands unfinished purchases to the app at its next
        /// launch); before that it waits. Below the 12 hours Apple allows.
        public var undeliveredAfterHours = 9
        public var metricsFile: String?
    }

    /// The App Store's refund-request feed settings (`refund_requests`' keys of its own).
    public var refundRequestFeed: RefundRequestFeed {
        get { appStore.refundRequestFeed }
        set { appStore.refundRequestFeed = newValue }
    }

    /// The App Store's API settings (`apple`), as the App Store's driver read them.
    public var apple: Apple {
        get { appStore.apple }
        set { appStore.apple = newValue }
    }

    /// The App Store apps (`apps`).
    public var apps: [App] {
        get { appStore.apps }
        set { appStore.apps = newValue }
    }

    /// `run.claw_back_unknown_to_apple`: a purchase Apple conclusively does not know is clawed back.
    public var clawBackUnknownToApple: Bool {
        get { appStore.clawBackUnknown }
        set { appStore.clawBackUnknown = newValue }
    }

    var appStore: AppStoreSettings {
        get { settings(of: .appStore) as? AppStoreSettings ?? AppStoreSettings() }
        set { setSettings(newValue, of: .appStore) }
    }
}

/// The App Store's settings: its sections `apple` and `apps`, and the shared run section's
/// `claw_back_unknown_to_apple`; every problem named with its field (docs/configuration.md).
struct AppStoreSettings: StoreSettings {
    var apple = ClawbackConfiguration.Apple()
    var apps: [ClawbackConfiguration.App] = []
    var clawBackUnknown = false
    var refundRequestFeed = ClawbackConfiguration.RefundRequestFeed()

    static let endpoints = [
        "transaction_info", "transaction_history", "refund_history", "notification_history", "look_up_order_id", "send_consumption_information",
    ]

    static func read(_ file: ConfigurationSection) -> AppStoreSettings {
        var settings = AppStoreSettings()
        let apple = file.section("apple")
        apple.rejectUnknownKeys([
            "production_url", "sandbox_url", "verify_receipt_production_url", "verify_receipt_sandbox_url", "extra_ca_file", "trusted_roots",
            "rate_limits", "concurrency", "timeout_seconds",
        ])
        if let url = apple.string("production_url") { settings.apple.productionURL = url }
        if let url = apple.string("sandbox_url") { settings.apple.sandboxURL = url }
        if let url = apple.string("verify_receipt_production_url") { settings.apple.verifyReceiptProductionURL = url }
        if let url = apple.string("verify_receipt_sandbox_url") { settings.apple.verifyReceiptSandboxURL = url }
        settings.apple.extraCAFile = apple.filePath("extra_ca_file")
        settings.apple.trustedRoots = apple.list("trusted_roots").compactMap(\.resolvedText)
        let rates = apple.section("rate_limits")
        rates.rejectUnknownKeys(Set(endpoints))
        for endpoint in endpoints {
            guard let rate = rates.double(endpoint) else { continue }
            if rate > 0 { settings.apple.rateLimits[endpoint] = rate } else { rates.problem(endpoint, "must be positive") }
        }
        if let concurrency = apple.int("concurrency") {
            if (1...1024).contains(concurrency) {
                settings.apple.concurrency = concurrency
            } else {
                apple.problem("concurrency", "must be between 1 and 1024")
            }
        }
        if let timeout = apple.double("timeout_seconds") {
            if (1...120).contains(timeout) {
                settings.apple.timeoutSeconds = timeout
            } else {
                apple.problem("timeout_seconds", "is \(timeout); must be from 1 to 120 seconds")
            }
        }
        for node in file.list("apps") {
            guard let app = readApp(node) else { continue }
            if settings.apps.contains(where: { $0.bundleID == app.bundleID }) { node.problem("bundle_id", "\(app.bundleID) is configured twice") }
            settings.apps.append(app)
        }
        if let flag = file.section("run").bool("claw_back_unknown_to_apple") { settings.clawBackUnknown = flag }
        let feed = file.section("refund_requests")
        func bounded(_ key: String, _ range: ClosedRange<Int>) -> Int? {
            guard let value = feed.int(key) else { return nil }
            guard range.contains(value) else {
                feed.problem(key, "must be between \(range.lowerBound) and \(range.upperBound)")
                return nil
            }
            return value
        }
        // Apple keeps 180 days of notification history; requests older than 12 hours cannot be answered.
        if let hours = bounded("lookback_hours", 1...4320) { settings.refundRequestFeed.lookbackHours = hours }
        if let minutes = bounded("overlap_minutes", 0...1440) { settings.refundRequestFeed.overlapMinutes = minutes }
        // Hourly runs: at least one run must come after it and before the 12 hours end.
        if let hours = bounded("undelivered_after_hours", 0...10) { settings.refundRequestFeed.undeliveredAfterHours = hours }
        settings.refundRequestFeed.metricsFile = feed.filePath("metrics_file")
        return settings
    }

    static func readApp(_ node: ConfigurationSection) -> ClawbackConfiguration.App? {
        node.rejectUnknownKeys([
            "bundle_id", "app_apple_id", "environment", "issuer_id", "key_id", "key_file", "shared_secret_file", "shared_secret", "private_key",
            "refund_requests",
        ])
        for secret in ["shared_secret", "private_key"] where node.section(secret).isPresent {
            node.problem(secret, "secrets are never written in the configuration; use \(secret == "private_key" ? "key_file" : "shared_secret_file")")
        }
        func required(_ key: String) -> String {
            guard let value = node.string(key), !value.isEmpty else {
                node.problem(key, "is required")
                return ""
            }
            return value
        }
        var app = ClawbackConfiguration.App(
            bundleID: required("bundle_id"), issuerID: required("issuer_id"), keyID: required("key_id"), keyFile: required("key_file"))
        if !app.keyFile.isEmpty { app.keyFile = node.filePath("key_file") ?? app.keyFile }
        if let id = node.int("app_apple_id") { app.appAppleID = Int64(id) }
        if let environment = node.string("environment") {
            if ["Production", "Sandbox"].contains(environment) {
                app.environment = environment
            } else {
                node.problem("environment", "must be Production or Sandbox")
            }
        }
        app.sharedSecretFile = node.string("shared_secret_file").flatMap { $0.isEmpty ? nil : node.filePath("shared_secret_file") }
        if node.string("shared_secret_file") == "" { node.problem("shared_secret_file", "is empty: name the file, or leave the key out") }
        app.refundRequests = node.appRefundRequests("refund_requests")
        return app
    }

    /// Its endpoints use TLS unless they are on this machine (the simulator).
    func finalProblems() -> [ConfigurationError] {
        [
            ("apple.production_url", apple.productionURL), ("apple.sandbox_url", apple.sandboxURL),
            ("apple.verify_receipt_production_url", apple.verifyReceiptProductionURL),
            ("apple.verify_receipt_sandbox_url", apple.verifyReceiptSandboxURL),
        ].compactMap { ClawbackConfiguration.transportProblem(field: $0.0, $0.1) }
    }
}
