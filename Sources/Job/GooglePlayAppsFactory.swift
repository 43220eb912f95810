import Foundation
import GooglePlay

/// Google Play's clients for the configured apps: each app's service account key read under the secret-file
/// rule, its token requests sent where the configuration says.
enum GooglePlayAppsFactory {
    /// The key of `googleApps[index]`; a problem names the field.
    static func key(_ index: Int, _ configuration: ClawbackConfiguration) throws(ConfigurationErrors) -> ServiceAccountKey {
        let app = configuration.googleApps[index]
        let field = "google_apps[\(index)].service_account_key_file"
        let text = try SecretFile.text(app.serviceAccountKeyFile, field: field)
        do {
            let key = try ServiceAccountKey(json: Data(text.utf8), source: app.serviceAccountKeyFile)
            return configuration.google.tokenURL.map(key.askingTokens(at:)) ?? key
        } catch {
            throw ConfigurationErrors(errors: [ConfigurationError(field: field, problem: error.description)])
        }
    }
}
