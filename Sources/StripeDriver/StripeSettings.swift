import Foundation
public import Job

/// The `stripe:` section of the configuration file.
public struct StripeSettings: StoreSettings {
    /// The restricted key (`rk_live_…`), in a file only its owner may read (mode 0600 or 0640).
    public var apiKeyFile: String?
    /// Stripe's API, or a simulator standing in.
    public var apiURL = "https://api.stripe.com"
    /// The web shops whose grants are Stripe's (each grant's `bundle_id`).
    public var shops: [String] = []
    /// Each request's limit, in seconds.
    public var timeoutSeconds = 30.0
    /// Requests a second to each of Stripe's resources (charges, refunds, disputes, …), retries included:
    /// Stripe allows 25 a second per endpoint and 100 in all in live mode, and asks background jobs to
    /// stay well below.
    public var requestsPerSecond = 20.0
    /// What the runs make of a payment Radar warned about that Stripe shows neither refunded nor disputed:
    /// `show` (finance's reports only; the default) or `review` (a person looks; never units).
    public var earlyFraudWarnings = FraudWarningPolicy.show

    public enum FraudWarningPolicy: String, Sendable, CaseIterable {
        case show, review
    }

    static let keys: Set<String> = ["api_key_file", "api_url", "shops", "timeout_seconds", "early_fraud_warnings", "requests_per_second"]

    static func read(_ section: ConfigurationSection) -> StripeSettings? {
        guard section.isPresent else { return nil }
        section.rejectUnknownKeys(keys)
        var settings = StripeSettings()
        settings.apiKeyFile = section.filePath("api_key_file")
        if settings.apiKeyFile == nil { section.problem("api_key_file", "names the file of Stripe's restricted key") }
        if let url = section.string("api_url") { settings.apiURL = url }
        for (index, shop) in section.list("shops").enumerated() {
            guard let name = shop.string("name"), !name.isEmpty else {
                section.problem("shops[\(index)].name", "names the web shop (its grants' bundle_id)")
                continue
            }
            shop.rejectUnknownKeys(["name"])
            settings.shops.append(name)
        }
        if let text = section.string("early_fraud_warnings") {
            if let policy = FraudWarningPolicy(rawValue: text) {
                settings.earlyFraudWarnings = policy
            } else {
                section.problem("early_fraud_warnings", "must be show or review, not \(text)")
            }
        }
        if let timeout = section.double("timeout_seconds") {
            if (1...120).contains(timeout) {
                settings.timeoutSeconds = timeout
            } else {
                section.problem("timeout_seconds", "must be between 1 and 120")
            }
        }
        if let rate = section.double("requests_per_second") {
            if rate > 0 && rate <= 10_000 {
                settings.requestsPerSecond = rate
            } else {
                section.problem("requests_per_second", "must be above 0 and at most 10000 (above 25, Stripe answers 429s; for a simulator)")
            }
        }
        return settings
    }
}
