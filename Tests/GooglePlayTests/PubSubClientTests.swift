import AppStoreSimulator
import Foundation
import GooglePlay
import Testing

/// clawback's Pub/Sub client against the simulator's pull subscription over loopback, and the notifications
/// it carries read as Google encodes them.
@Suite("Google Play: real-time notifications through a Pub/Sub pull subscription")
struct PubSubClientTests {
    static let package = GoogleClientFixture.packageName

    static func voided(_ number: Int, at time: Date = Date()) -> DeveloperNotification {
        DeveloperNotification(
            packageName: package, eventTime: time,
            voidedPurchase: .init(purchaseToken: "token-\(number)", orderId: "GPA.3300-0000-0000-\(number)"))
    }

    @Test(
        "a message acknowledged is never delivered again; one left unacknowledged comes again after its deadline; a deadline of 0 gives it back at once"
    )
    func leases() async throws {
        let clock = Clock(Date())
        try await GoogleClientFixture.with(orders: [], clock: clock) { fixture in
            let client = try fixture.pubSub()
            #expect(try await client.pull(maximum: 10).isEmpty, "nothing waits: an empty answer")
            for number in 0..<3 { fixture.google.notify(Self.voided(number)) }
            let first = try await client.pull(maximum: 10)
            #expect(first.count == 3 && Set(first.map(\.messageID)).count == 3)
            #expect(try await client.pull(maximum: 10).isEmpty, "leased until their deadline")

            try await client.acknowledge([first[0].ackID])
            try await client.modifyAckDeadline([first[1].ackID], seconds: 0)
            let released = try await client.pull(maximum: 10)
            #expect(released.map(\.messageID) == [first[1].messageID], "handed back at once")
            #expect(released[0].ackID != first[1].ackID, "a redelivery has its own ack id")

            // Past the subscription's deadline (Pub/Sub's default, 10 s), what was not acknowledged comes again.
            clock.now += 11
            let again = try await client.pull(maximum: 10)
            #expect(Set(again.map(\.messageID)) == [first[1].messageID, first[2].messageID])
            // An acknowledgement of an expired delivery is accepted and does nothing.
            try await client.acknowledge([first[2].ackID])
            try await client.acknowledge(again.map(\.ackID))
            clock.now += 11
            #expect(try await client.pull(maximum: 10).isEmpty)
            #expect(fixture.google.pubSub.waiting(in: GoogleClientFixture.subscription) == 0)
        }
    }

    @Test("at least once: a message delivered twice in one pull, and an acknowledgement Pub/Sub lost, bring the same message id again")
    func duplicates() async throws {
        let clock = Clock(Date())
        try await GoogleClientFixture.with(orders: [], clock: clock) { fixture in
            let client = try fixture.pubSub()
            fixture.google.notify(Self.voided(1))
            fixture.google.pubSub.setFaults(PubSubFaults(duplicateNextPull: true))
            let twice = try await client.pull(maximum: 10)
            #expect(twice.count == 2 && Set(twice.map(\.messageID)).count == 1 && Set(twice.map(\.ackID)).count == 2)
            fixture.google.pubSub.setFaults(PubSubFaults(loseNextAcknowledgement: true))
            try await client.acknowledge(twice.map(\.ackID))
            clock.now += 11
            let again = try await client.pull(maximum: 10)
            #expect(again.map(\.messageID) == [twice[0].messageID])
        }
    }

    @Test(
        "who may pull: an account without the Subscriber role is refused and told which role; checkAccess consumes nothing; a token without Pub/Sub's scope and an unknown subscription are refused"
    )
    func access() async throws {
        let other = "someone@studio-project.iam.gserviceaccount.com"
        try await GoogleClientFixture.with(
            orders: [],
            subscriptions: [
                GoogleSubscriptionRecord(
                    name: GoogleClientFixture.subscription, topic: GoogleClientFixture.topic, subscribers: [GoogleClientFixture.account]),
                GoogleSubscriptionRecord(
                    name: "projects/studio-project/subscriptions/locked", topic: GoogleClientFixture.topic, subscribers: [other]),
            ]
        ) { fixture in
            fixture.google.notify(Self.voided(1))
            let allowed = try fixture.pubSub()
            #expect(await allowed.checkAccess() == nil)
            #expect(try await allowed.pull(maximum: 1).count == 1, "checkAccess left the message waiting")

            let locked = try fixture.pubSub(subscription: "projects/studio-project/subscriptions/locked")
            let refusal = await locked.checkAccess()
            #expect(refusal?.description.contains("Pub/Sub Subscriber role") == true, "\(String(describing: refusal))")
            await #expect(throws: GooglePlayError.self) { try await locked.pull(maximum: 1) }
            #expect(fixture.google.pubSub.waiting(in: "projects/studio-project/subscriptions/locked") == 1)

            let missing = try fixture.pubSub(subscription: "projects/studio-project/subscriptions/missing")
            if case .refused(404, _) = await missing.checkAccess()?.kind {} else { Issue.record("an unknown subscription is not 404") }

            let wrongScope = try fixture.pubSub(scopes: AccessTokenProvider.scope)
            if case .refused(403, _) = await wrongScope.checkAccess()?.kind {} else { Issue.record("a token without Pub/Sub's scope is not refused") }
        }
        #expect(PubSubClient.isSubscriptionName(GoogleClientFixture.subscription))
        for bad in [
            "projects/p/topics/t", "subscriptions/s", "projects//subscriptions/s", "projects/p/subscriptions/s:pull", "projects/p/subscriptions/a b",
        ] {
            #expect(!PubSubClient.isSubscriptionName(bad), "\(bad)")
        }
    }

    @Test(
        "each notification read as Google encodes it: voids, chargeback reviews, tests, the kinds clawback leaves, and data that is no notification named for what is wrong"
    )
    func notifications() async throws {
        try await GoogleClientFixture.with(orders: []) { fixture in
            let time = Date(timeIntervalSince1970: 1_790_000_000.123)
            fixture.google.notify(Self.voided(7, at: time))
            fixture.google.notify(
                DeveloperNotification(
                    packageName: Self.package, eventTime: time,
                    pendingRefundReview: .init(pendingRefundToken: "prt-1", orderId: "GPA.1", obfuscatedAccountId: "acct-9")))
            fixture.google.notify(DeveloperNotification(packageName: Self.package, eventTime: time, test: .init()))
            let messages = try await fixture.pubSub().pull(maximum: 10)
            let read = try messages.map { message throws in try DeveloperNotification.read(try #require(message.data)) }
            #expect(read.allSatisfy { $0.packageName == Self.package && abs($0.eventTime.timeIntervalSince(time)) < 0.001 })
            #expect(read.contains { $0.content == .voided(purchaseToken: "token-7", orderID: "GPA.3300-0000-0000-7", productType: 2, refundType: 1) })
            #expect(
                read.contains {
                    if case .refundReview(let review, "prt-1", "GPA.1") = $0.content { review.obfuscatedAccountId == "acct-9" } else { false }
                })
            #expect(read.contains { $0.content == .test })
        }
        // Google's own example writes eventTimeMillis as a string; a number reads the same.
        let example =
            #"{"version":"1.0","packageName":"com.some.app","eventTimeMillis":"1503349566168","voidedPurchaseNotification":{"purchaseToken":"PURCHASE_TOKEN","orderId":"GS.0000-0000-0000","productType":1,"refundType":1}}"#
        let asNumber = example.replacingOccurrences(of: #""1503349566168""#, with: "1503349566168")
        for text in [example, asNumber] {
            let read = try DeveloperNotification.read(Array(text.utf8))
            #expect(read.eventTime == Date(timeIntervalSince1970: 1_503_349_566.168))
            #expect(read.content == .voided(purchaseToken: "PURCHASE_TOKEN", orderID: "GS.0000-0000-0000", productType: 1, refundType: 1))
        }
        let subscription =
            #"{"version":"1.0","packageName":"a.b","eventTimeMillis":"1","subscriptionNotification":{"version":"1.0","notificationType":4,"purchaseToken":"t"}}"#
        #expect(try DeveloperNotification.read(Array(subscription.utf8)).content == .notForClawback(kind: "subscriptionNotification"))
        let broken: [(String, String)] = [
            ("not json", "not a developer notification's JSON"),
            (#"{"eventTimeMillis":"1","testNotification":{}}"#, "no packageName"),
            (#"{"packageName":"a.b","testNotification":{}}"#, "no eventTimeMillis"),
            (#"{"packageName":"a.b","eventTimeMillis":"1"}"#, "no notification this version knows"),
            (#"{"packageName":"a.b","eventTimeMillis":"1","futureNotification":{"x":1}}"#, "no notification this version knows"),
            (
                #"{"packageName":"a.b","eventTimeMillis":"1","testNotification":{},"voidedPurchaseNotification":{"purchaseToken":"t","orderId":"o"}}"#,
                "several notifications"
            ),
            (#"{"packageName":"a.b","eventTimeMillis":"1","voidedPurchaseNotification":{"orderId":"o"}}"#, "without its purchaseToken"),
            (#"{"packageName":"a.b","eventTimeMillis":"1","pendingRefundReviewNotification":{"orderId":"o"}}"#, "without its pendingRefundToken"),
        ]
        for (text, problem) in broken {
            #expect(throws: NotificationReadingError.self, "\(text)") { try DeveloperNotification.read(Array(text.utf8)) }
            do {
                _ = try DeveloperNotification.read(Array(text.utf8))
            } catch {
                #expect(error.description.contains(problem), "\(text): \(error)")
            }
        }
    }
}
