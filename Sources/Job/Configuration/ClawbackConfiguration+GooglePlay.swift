import Foundation

/// `google` and `google_apps`: Google Play's API, and each app (package name) with the service account that
/// reads it. Runs do not check Google Play grants yet (docs/google-play.md, "What is built"); `config check`
/// proves each app's credentials and permission already.
extension ClawbackConfiguration {
    public struct GooglePlay: Sendable, Equatable {
        /// The Play Developer API's base URL (the simulator's for rehearsals).
        public var apiURL = "https://androidpublisher.googleapis.com"
        /// Where tokens are asked instead of each key file's `token_uri` (the simulator's for rehearsals).
        public var tokenURL: String?
        public var timeoutSeconds = 30.0
    }

    public struct GoogleApp: Sendable, Equatable {
        /// The app's package name, e.g. com.studio.game.
        public var packageName: String
        /// The service account's JSON key, readable by no one but its owner and group (0600, 0640, 0440).
        public var serviceAccountKeyFile: String
    }

    static func parseGooglePlay(
        _ root: ConfigNode, into configuration: inout ClawbackConfiguration, errors: inout [ConfigurationError], resolve: (String?) -> String?
    ) {
        let google = root.child("google")
        google.rejectUnknownKeys(["api_url", "token_url", "timeout_seconds"], into: &errors)
        if let url = google.child("api_url").string(into: &errors) { configuration.google.apiURL = url }
        configuration.google.tokenURL = google.child("token_url").string(into: &errors)
        if let timeout = google.child("timeout_seconds").double(into: &errors) {
            if timeout > 0 {
                configuration.google.timeoutSeconds = timeout
            } else {
                errors.append(ConfigurationError(field: "google.timeout_seconds", problem: "must be positive"))
            }
        }
        for node in root.child("google_apps").list(into: &errors) {
            node.rejectUnknownKeys(["package_name", "service_account_key_file", "service_account_key", "private_key"], into: &errors)
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
            configuration.googleApps.append(GoogleApp(packageName: package, serviceAccountKeyFile: key))
        }
    }
}
