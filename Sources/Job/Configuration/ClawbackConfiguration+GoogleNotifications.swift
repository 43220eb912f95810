import Foundation
import GooglePlay

/// `google.notifications`: the Cloud Pub/Sub pull subscription on the topic the Play Console publishes the
/// apps' real-time developer notifications to, read hourly by `clawback google-play notifications`.
extension ClawbackConfiguration {
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

    static func parseGoogleNotifications(
        _ node: ConfigNode, into configuration: inout ClawbackConfiguration, errors: inout [ConfigurationError], resolve: (String?) -> String?
    ) {
        guard node.isPresent else { return }
        node.rejectUnknownKeys(["subscription", "service_account_key_file", "pubsub_url", "max_messages_per_run", "metrics_file"], into: &errors)
        let subscription = node.child("subscription").string(into: &errors) ?? ""
        if !PubSubClient.isSubscriptionName(subscription) {
            errors.append(
                ConfigurationError(
                    field: "google.notifications.subscription",
                    problem: subscription.isEmpty
                        ? "is required: projects/{project}/subscriptions/{subscription}"
                        : "is \"\(subscription)\"; expected projects/{project}/subscriptions/{subscription}"))
        }
        var settings = GoogleNotifications(subscription: subscription)
        settings.serviceAccountKeyFile = resolve(node.child("service_account_key_file").string(into: &errors))
        if let url = node.child("pubsub_url").string(into: &errors) { settings.pubsubURL = url }
        if let maximum = node.child("max_messages_per_run").int(into: &errors) {
            if maximum > 0 {
                settings.maximumMessagesPerRun = maximum
            } else {
                errors.append(ConfigurationError(field: "google.notifications.max_messages_per_run", problem: "must be positive"))
            }
        }
        settings.metricsFile = resolve(node.child("metrics_file").string(into: &errors))
        configuration.google.notifications = settings
    }
}
