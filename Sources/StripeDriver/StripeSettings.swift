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

    static let keys: Set<String> = ["api_key_file", "api_url", "shops", "timeout_seconds"]

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
        if let timeout = section.double("timeout_seconds") {
            if (1...120).contains(timeout) {
                settings.timeoutSeconds = timeout
            } else {
                section.problem("timeout_seconds", "must be between 1 and 120")
            }
        }
        return settings
    }
}
