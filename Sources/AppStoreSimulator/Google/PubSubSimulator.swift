import Foundation
import Locking

/// Cloud Pub/Sub's pull subscriptions as a subscriber sees them over REST (`/v1/projects/*/subscriptions/*`:
/// `:pull`, `:acknowledge`, `:modifyAckDeadline`, `:testIamPermissions`), with Pub/Sub's semantics: delivery
/// at least once and in no order; a message pulled is leased until its acknowledgement deadline and delivered
/// again once the lease ends unacknowledged; an acknowledgement of an expired lease is accepted and does
/// nothing; unacknowledged messages are kept for the retention (7 days).
public final class PubSubSimulator: Sendable {
    static let pathPrefix = "/v1/projects/"
    static let retention: TimeInterval = 7 * 86_400
    static let maximumPull = 1000
    /// Pub/Sub's bound on `ackDeadlineSeconds`, in a subscription and in `modifyAckDeadline`.
    static let maximumAckDeadline = 600

    /// A message waiting in a subscription.
    struct Message: Sendable {
        var id: String
        var data: [UInt8]
        var attributes: [String: String]
        var published: Date
    }

    struct Lease: Sendable {
        var subscription: String
        var messageID: String
        var deadline: Date
    }

    struct State: Sendable {
        /// Unacknowledged messages per subscription, by message id.
        var waiting: [String: [String: Message]] = [:]
        var leases: [String: Lease] = [:]
        var nextMessageID = 7_000_000_000_001
        /// Every message id an acknowledgement took away, per subscription.
        var acknowledgedIDs: [String: Set<String>] = [:]
    }

    private let state = Locked(State())
    let faults = Locked(PubSubFaults())
    let clock: @Sendable () -> Date

    init(clock: @escaping @Sendable () -> Date) {
        self.clock = clock
    }

    /// Publishes `data` to `topic`: every subscription of the topic gets its own copy (none without one).
    /// Returns the message id Pub/Sub gave it.
    @discardableResult
    public func publish(_ data: [UInt8], attributes: [String: String] = [:], topic: String, world: GooglePlayWorld) -> String {
        let now = clock()
        return state.withLock { state in
            let id = String(state.nextMessageID)
            state.nextMessageID += 1
            for subscription in world.subscriptions.values where subscription.topic == topic {
                state.waiting[subscription.name, default: [:]][id] = Message(id: id, data: data, attributes: attributes, published: now)
            }
            return id
        }
    }

    /// Messages not yet acknowledged in `subscription`.
    public func waiting(in subscription: String) -> Int { state.withLock { $0.waiting[subscription]?.count ?? 0 } }

    /// The ids of the messages acknowledged away from `subscription`.
    public func acknowledgedMessageIDs(in subscription: String) -> Set<String> { state.withLock { $0.acknowledgedIDs[subscription] ?? [] } }

    /// Misbehaviour for the next calls (tests): see `PubSubFaults`.
    public func setFaults(_ faults: PubSubFaults) { self.faults.withLock { $0 = faults } }

    /// Answers a Pub/Sub REST call on `subscription` (its full name), for `account`, already authenticated.
    func handle(_ request: SimulatorRequest, subscription name: String, verb: String, account: String, world: GooglePlayWorld) -> SimulatorReply {
        guard request.method == "POST" else { return .respond(status: 404, headers: [], body: []) }
        guard let subscription = world.subscriptions[name] else {
            return GooglePlaySimulator.googleError(
                404, "NOT_FOUND", "notFound", "Resource not found (resource=\(name.split(separator: "/").last ?? "")).")
        }
        guard let body = try? JSONSerialization.jsonObject(with: Data(request.body.isEmpty ? Array("{}".utf8) : request.body)) as? [String: Any]
        else { return Self.invalid("Invalid JSON payload received.") }
        let subscriber = subscription.subscribers.contains(account)
        if verb == "testIamPermissions" {
            // Anyone may ask; the answer holds what the caller has among what it asked.
            let asked = body["permissions"] as? [String] ?? []
            let held = subscriber ? ["pubsub.subscriptions.consume"] : []
            return GooglePlaySimulator.json(["permissions": asked.filter(held.contains)])
        }
        guard subscriber else {
            return GooglePlaySimulator.googleError(403, "PERMISSION_DENIED", "forbidden", "User not authorized to perform this action.")
        }
        if let status = faults.withLock({ $0.nextFailure() }) {
            return GooglePlaySimulator.googleError(status, status == 429 ? "RESOURCE_EXHAUSTED" : "UNAVAILABLE", "backendError", "Injected failure.")
        }
        switch verb {
        case "pull": return pull(body, subscription: subscription)
        case "acknowledge": return acknowledge(body, subscription: subscription)
        case "modifyAckDeadline": return modifyAckDeadline(body, subscription: subscription)
        default: return .respond(status: 404, headers: [], body: [])
        }
    }

    private func pull(_ body: [String: Any], subscription: GoogleSubscriptionRecord) -> SimulatorReply {
        guard let maximum = body["maxMessages"] as? Int, (1...Self.maximumPull).contains(maximum) else {
            return Self.invalid("maxMessages must be between 1 and \(Self.maximumPull).")
        }
        let now = clock()
        let deadline = now + TimeInterval(subscription.ackDeadlineSeconds ?? 10)
        let duplicate = faults.withLock { $0.takeDuplicate() }
        let delivered: [(ackID: String, message: Message)] = state.withLock { state in
            var queue = state.waiting[subscription.name] ?? [:]
            queue = queue.filter { $0.value.published > now - Self.retention }
            state.waiting[subscription.name] = queue
            state.leases = state.leases.filter { $0.value.deadline > now }
            let leased = Set(state.leases.values.filter { $0.subscription == subscription.name }.map(\.messageID))
            // No order: Pub/Sub promises none without an ordering key.
            var chosen = Array(queue.values.filter { !leased.contains($0.id) }.shuffled().prefix(maximum))
            if duplicate, chosen.count < maximum, let first = chosen.first { chosen.append(first) }
            return chosen.map { message in
                let ackID = "sim-ack-" + UUID().uuidString
                state.leases[ackID] = Lease(subscription: subscription.name, messageID: message.id, deadline: deadline)
                return (ackID, message)
            }
        }
        // An empty pull answers `{}`, as Pub/Sub does; it may hold it first, as Pub/Sub may.
        guard !delivered.isEmpty else {
            let hold = faults.withLock { $0.holdEmptyPullMilliseconds }
            return hold > 0 ? .delayed(milliseconds: hold, .json(200, Array("{}".utf8))) : .json(200, Array("{}".utf8))
        }
        let formatter = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
        let received: [[String: Any]] = delivered.map { ackID, message in
            var fields: [String: Any] = [
                "data": Data(message.data).base64EncodedString(), "messageId": message.id, "publishTime": message.published.formatted(formatter),
            ]
            if !message.attributes.isEmpty { fields["attributes"] = message.attributes }
            return ["ackId": ackID, "message": fields]
        }
        return Self.object(["receivedMessages": received])
    }

    private func acknowledge(_ body: [String: Any], subscription: GoogleSubscriptionRecord) -> SimulatorReply {
        guard let ackIDs = body["ackIds"] as? [String], !ackIDs.isEmpty else { return Self.invalid("No ack ids specified.") }
        guard ackIDs.allSatisfy({ $0.hasPrefix("sim-ack-") }) else { return Self.invalid("You have passed an invalid ack ID to the service.") }
        let now = clock()
        let lost = faults.withLock { $0.takeLostAcknowledgements() }
        state.withLock { state in
            for ackID in ackIDs {
                // An expired lease's acknowledgement is accepted and does nothing: the message comes again.
                guard !lost, let lease = state.leases[ackID], lease.subscription == subscription.name, lease.deadline > now else { continue }
                state.leases[ackID] = nil
                if state.waiting[subscription.name]?.removeValue(forKey: lease.messageID) != nil {
                    state.acknowledgedIDs[subscription.name, default: []].insert(lease.messageID)
                }
                state.leases = state.leases.filter { $0.value.messageID != lease.messageID || $0.value.subscription != subscription.name }
            }
        }
        return .json(200, Array("{}".utf8))
    }

    private func modifyAckDeadline(_ body: [String: Any], subscription: GoogleSubscriptionRecord) -> SimulatorReply {
        guard let ackIDs = body["ackIds"] as? [String], !ackIDs.isEmpty else { return Self.invalid("No ack ids specified.") }
        guard let seconds = body["ackDeadlineSeconds"] as? Int, (0...Self.maximumAckDeadline).contains(seconds) else {
            return Self.invalid("Invalid ack deadline given: it must be between 0 and \(Self.maximumAckDeadline) seconds.")
        }
        guard ackIDs.allSatisfy({ $0.hasPrefix("sim-ack-") }) else { return Self.invalid("You have passed an invalid ack ID to the service.") }
        let now = clock()
        state.withLock { state in
            for ackID in ackIDs {
                guard var lease = state.leases[ackID], lease.subscription == subscription.name, lease.deadline > now else { continue }
                // 0 releases the message at once for another delivery.
                lease.deadline = now + TimeInterval(seconds)
                state.leases[ackID] = seconds == 0 ? nil : lease
            }
        }
        return .json(200, Array("{}".utf8))
    }

    static func invalid(_ message: String) -> SimulatorReply {
        GooglePlaySimulator.googleError(400, "INVALID_ARGUMENT", "badRequest", message)
    }

    static func object(_ value: [String: Any]) -> SimulatorReply {
        guard let body = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return GooglePlaySimulator.googleError(500, "INTERNAL", "backendError", "Internal error encountered.")
        }
        return .json(200, Array(body))
    }
}

/// What Pub/Sub does wrong on purpose, for tests, within its contract: the next calls fail with a status; the
/// next pull delivers one message twice; the next acknowledgement is lost (accepted, never applied), so the
/// message comes again.
public struct PubSubFaults: Sendable {
    public var failures: [Int]
    public var duplicateNextPull: Bool
    public var loseNextAcknowledgement: Bool
    /// After `failures`, this share of calls fails at random (seeded) with 503, before doing anything.
    public var failureShare: Double
    /// A pull that finds nothing answers this late (Pub/Sub may hold such a pull before it answers).
    public var holdEmptyPullMilliseconds: Int
    private var random = SeededGenerator(seed: 0x9B5B_FA17)

    public init(
        failures: [Int] = [], duplicateNextPull: Bool = false, loseNextAcknowledgement: Bool = false, failureShare: Double = 0,
        holdEmptyPullMilliseconds: Int = 0
    ) {
        self.holdEmptyPullMilliseconds = holdEmptyPullMilliseconds
        self.failures = failures
        self.duplicateNextPull = duplicateNextPull
        self.loseNextAcknowledgement = loseNextAcknowledgement
        self.failureShare = failureShare
    }

    mutating func nextFailure() -> Int? {
        if !failures.isEmpty { return failures.removeFirst() }
        guard failureShare > 0, Double.random(in: 0..<1, using: &random) < failureShare else { return nil }
        return 503
    }

    mutating func takeDuplicate() -> Bool {
        defer { duplicateNextPull = false }
        return duplicateNextPull
    }

    mutating func takeLostAcknowledgements() -> Bool {
        defer { loseNextAcknowledgement = false }
        return loseNextAcknowledgement
    }
}
