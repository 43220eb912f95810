import Foundation

extension ClawbackConfiguration {
    /// `metrics`: the Pushgateway every job pushes to. Its URL is an `http` or `https` URL without
    /// credentials (secrets never come from this file), a query or a fragment: the group's path is appended.
    static func parseMetrics(_ node: ConfigNode, into metrics: inout Metrics, errors: inout [ConfigurationError]) {
        node.rejectUnknownKeys(["pushgateway_url", "push_timeout_seconds"], into: &errors)
        if let url = node.child("pushgateway_url").string(into: &errors) {
            if let problem = pushgatewayURLProblem(url) {
                errors.append(ConfigurationError(field: "metrics.pushgateway_url", problem: problem))
            } else {
                metrics.pushgatewayURL = url
            }
        }
        if let seconds = node.child("push_timeout_seconds").int(into: &errors) {
            if (1...300).contains(seconds) {
                metrics.pushTimeoutSeconds = seconds
            } else {
                errors.append(ConfigurationError(field: "metrics.push_timeout_seconds", problem: "must be between 1 and 300"))
            }
        }
    }

    /// What is wrong with a Pushgateway URL, if anything.
    static func pushgatewayURLProblem(_ url: String) -> String? {
        guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased(), ["http", "https"].contains(scheme),
            let host = parts.host, !host.isEmpty
        else { return "must be an http or https URL such as http://pushgateway.monitoring:9091" }
        if parts.user != nil || parts.password != nil { return "carries credentials; secrets never come from this file" }
        if parts.query != nil || parts.fragment != nil { return "must have no query or fragment: the group's path is appended to it" }
        return nil
    }
}
