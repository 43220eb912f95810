public import Foundation
public import HTTP

/// The OAuth scopes Cloud Pub/Sub takes.
public enum PubSubScope {
    public static let pubsub = "https://www.googleapis.com/auth/pubsub"
    public static let cloudPlatform = "https://www.googleapis.com/auth/cloud-platform"
}

/// One Cloud Pub/Sub pull subscription over Pub/Sub's REST API (`projects.subscriptions.pull`,
/// `acknowledge`, `modifyAckDeadline`, `testIamPermissions`), with a service account's token for the Pub/Sub
/// scope: the way a batch job reads Google Play's real-time developer notifications without a server.
public final class PubSubClient: Sendable {
    /// Pub/Sub's bound on one pull.
    public static let maximumPull = 1000
    /// The most of a pull's answer read: a message's data is up to 10 MB (13.4 MB in base64), so one pull
    /// of several such messages passes the client's usual cap. A pull answer larger still is refused
    /// (`answerTooLarge`) and the run pulls fewer at a time.
    public static let maximumPullAnswerBytes = 64 << 20

    /// A message as a pull delivers it: `ackID` is this delivery's (a redelivery has another).
    public struct ReceivedMessage: Sendable, Equatable {
        public var ackID: String
        public var messageID: String
        /// The message's `data`, base64-decoded; nil when it was not base64.
        public var data: [UInt8]?
        /// The message's `data` as Pub/Sub sent it.
        public var rawData: String
        public var publishTime: Date?
        public var attributes: [String: String]

        public init(ackID: String, messageID: String, data: [UInt8]?, rawData: String, publishTime: Date?, attributes: [String: String]) {
            self.ackID = ackID
            self.messageID = messageID
            self.data = data
            self.rawData = rawData
            self.publishTime = publishTime
            self.attributes = attributes
        }
    }

    let calls: GoogleCalls
    /// `projects/{project}/subscriptions/{subscription}`.
    public let subscription: String
    public var statistics: GoogleCallStatistics { calls.counters.statistics }

    /// `baseURL` is Google's `https://pubsub.googleapis.com` unless a simulator stands in. `tokens` must ask
    /// for the Pub/Sub scope.
    public init(
        subscription: String, baseURL: String = "https://pubsub.googleapis.com", tokens: AccessTokenProvider, http: HTTPClient,
        retries: Int = 2, backoff: Duration = .milliseconds(500)
    ) {
        self.subscription = subscription
        let root = (baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL) + "/v1/"
        calls = GoogleCalls(name: subscription, rootURL: root, tokens: tokens, http: http, retries: retries, backoff: backoff)
    }

    /// Whether `name` is a subscription's full name as Pub/Sub writes it.
    public static func isSubscriptionName(_ name: String) -> Bool {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "projects" && parts[2] == "subscriptions" && !parts[1].isEmpty && !parts[3].isEmpty
            && name.allSatisfy { $0.isASCII && !$0.isWhitespace && $0 != "?" && $0 != "#" && $0 != ":" }
    }

    private func url(_ verb: String) -> String { calls.url(subscription + ":" + verb) }

    /// Up to `maximum` waiting messages, each leased until the subscription's acknowledgement deadline.
    /// Empty when none waits. Pub/Sub may hold a pull on an empty subscription for a while before it answers:
    /// a pull that times out is not asked again (its error says `timedOut`), since waiting longer finds nothing
    /// a later run would not.
    public func pull(maximum: Int) async throws(GooglePlayError) -> [ReceivedMessage] {
        let body = Array(#"{"maxMessages":\#(min(max(maximum, 1), Self.maximumPull))}"#.utf8)
        let answer = try await calls.post(
            url("pull"), json: body, askAgain: { $0.isTransient && !$0.timedOut }, maxResponseBytes: Self.maximumPullAnswerBytes
        ).get()
        struct Answer: Decodable {
            struct Received: Decodable {
                struct Message: Decodable {
                    var data: String?
                    var messageId: String?
                    var publishTime: String?
                    var attributes: [String: String]?
                }
                var ackId: String?
                var message: Message?
            }
            var receivedMessages: [Received]?
        }
        let decoded: Answer
        do {
            decoded = try JSONDecoder().decode(Answer.self, from: Data(answer))
        } catch {
            throw GooglePlayError(.malformedAnswer, "\(subscription)'s pull answer is not Pub/Sub's JSON: \(error)")
        }
        return try (decoded.receivedMessages ?? []).map { received throws(GooglePlayError) in
            guard let ackID = received.ackId, !ackID.isEmpty, let id = received.message?.messageId, !id.isEmpty else {
                throw GooglePlayError(.malformedAnswer, "\(subscription)'s pull answer holds a message without an ackId or a messageId")
            }
            return ReceivedMessage(
                ackID: ackID, messageID: id, data: received.message?.data.flatMap { Data(base64Encoded: $0).map(Array.init) },
                rawData: received.message?.data ?? "",
                publishTime: received.message?.publishTime.flatMap(OrderStatement.date),
                attributes: received.message?.attributes ?? [:])
        }
    }

    /// Acknowledges these deliveries: their messages are not delivered again (an expired delivery's
    /// acknowledgement is accepted by Pub/Sub and does nothing: its message comes again).
    public func acknowledge(_ ackIDs: [String]) async throws(GooglePlayError) {
        guard !ackIDs.isEmpty else { return }
        _ = try await calls.post(url("acknowledge"), json: try Self.json(["ackIds": ackIDs])).get()
    }

    /// Moves these deliveries' deadlines `seconds` from now; 0 hands their messages back at once.
    public func modifyAckDeadline(_ ackIDs: [String], seconds: Int) async throws(GooglePlayError) {
        guard !ackIDs.isEmpty else { return }
        struct Body: Encodable {
            var ackIds: [String]
            var ackDeadlineSeconds: Int
        }
        let body: [UInt8]
        do {
            body = Array(try JSONEncoder().encode(Body(ackIds: ackIDs, ackDeadlineSeconds: seconds)))
        } catch {
            throw GooglePlayError(.malformedAnswer, "cannot encode a modifyAckDeadline request: \(error)")
        }
        _ = try await calls.post(url("modifyAckDeadline"), json: body).get()
    }

    /// Whether this account may pull from the subscription, consuming nothing: `testIamPermissions` for
    /// `pubsub.subscriptions.consume` (the Pub/Sub Subscriber role's). Nil when it may.
    public func checkAccess() async -> GooglePlayError? {
        do {
            let answer = try await calls.post(url("testIamPermissions"), json: try Self.json(["permissions": ["pubsub.subscriptions.consume"]]))
                .get()
            struct Answer: Decodable { var permissions: [String]? }
            guard let granted = try? JSONDecoder().decode(Answer.self, from: Data(answer)) else {
                return GooglePlayError(.malformedAnswer, "\(subscription)'s testIamPermissions answer is not Pub/Sub's JSON")
            }
            guard granted.permissions?.contains("pubsub.subscriptions.consume") == true else {
                return GooglePlayError(
                    .refused(status: 403, reason: "PERMISSION_DENIED"),
                    "\(tokensAccount) may not pull from \(subscription): grant it the Pub/Sub Subscriber role on the subscription")
            }
            return nil
        } catch {
            return error
        }
    }

    private var tokensAccount: String { calls.tokens.key.clientEmail }

    static func json(_ object: [String: [String]]) throws(GooglePlayError) -> [UInt8] {
        do {
            return Array(try JSONEncoder().encode(object))
        } catch {
            throw GooglePlayError(.malformedAnswer, "cannot encode a Pub/Sub request: \(error)")
        }
    }
}
