import AppStoreSimulator
import Foundation
import GooglePlay
import HTTP
import Testing

/// `orders.reviewrefund` from clawback's client against the simulator: the answer Google takes once, its
/// checks, and a call that reaches Google at most once.
@Suite("Google Play: answering a chargeback review")
struct RefundReviewTests {
    static func order(_ number: Int, notified: Date) -> GoogleOrderRecord {
        var record = GoogleClientFixture.order(number)
        record.refundReview = .init(pendingRefundToken: "prt-\(number)", notifiedAt: notified)
        return record
    }

    static func answer(_ number: Int, _ preference: RefundReviewAnswer.Preference = .decline) -> RefundReviewAnswer {
        RefundReviewAnswer(
            pendingRefundToken: "prt-\(number)", preference: preference, sampleContentProvided: false, consumedMilliunits: 45_200,
            usageEvents: [.init(time: Date(timeIntervalSince1970: 1_790_000_000), description: "600 gems spent", obfuscatedAccountId: "acct-1")])
    }

    @Test(
        "an answer Google takes is recorded; a second one for the token is ignored, the first kept; another order's token, a closed window and an unknown order are refused"
    )
    func firstCallWins() async throws {
        let clock = Clock(Date())
        let orders = (1...4).map { Self.order($0, notified: clock.now - 3600) }
        try await GoogleClientFixture.with(orders: orders, clock: clock) { fixture in
            let client = OrdersClient(
                packageName: GoogleClientFixture.packageName, baseURL: fixture.baseURL,
                tokens: AccessTokenProvider(key: try fixture.keyFile(), http: fixture.http, clock: { clock.now }), http: fixture.http, retries: 0)
            #expect(await client.reviewRefund(orderID: orders[0].orderId, answer: Self.answer(1)) == .recorded)
            #expect(await client.reviewRefund(orderID: orders[0].orderId, answer: Self.answer(1, .approve)) == .recorded)
            let recorded = try #require(fixture.google.answeredReviews["prt-1"])
            #expect(recorded.preference == "DECLINE" && recorded.calls == 2 && recorded.consumptionMilliunits == 45_200 && recorded.usageEvents == 1)

            if case .refused(400, let why) = await client.reviewRefund(orderID: orders[1].orderId, answer: Self.answer(3)) {
                #expect(why.contains("not valid for this order"))
            } else {
                Issue.record("another order's token was not refused")
            }
            if case .refused(404, _) = await client.reviewRefund(orderID: "GPA.0000-unknown", answer: Self.answer(2)) {
            } else {
                Issue.record("an unknown order was not refused 404")
            }
            clock.now += 24 * 3600
            if case .refused(400, let why) = await client.reviewRefund(orderID: orders[3].orderId, answer: Self.answer(4)) {
                #expect(why.contains("FAILED_PRECONDITION"))
            } else {
                Issue.record("an answer after 24 hours was not refused")
            }
            #expect(fixture.google.answeredReviews["prt-4"] == nil)
        }
    }

    @Test(
        "sent until taken: asked again after 429, 503, 500 and a lost reply, and Google keeps one answer; three 500s are unconfirmed; a view-only account and a request that never left are not taken"
    )
    func sentUntilTaken() async throws {
        let orders = (1...4).map { Self.order($0, notified: Date()) }
        try await GoogleClientFixture.with(orders: orders) { fixture in
            let patient = OrdersClient(
                packageName: GoogleClientFixture.packageName, baseURL: fixture.baseURL,
                tokens: AccessTokenProvider(key: try fixture.keyFile(), http: fixture.http), http: fixture.http, retries: 2,
                backoff: .milliseconds(1))
            fixture.google.setFaults(GoogleFaults(failures: [429, 503]))
            #expect(await patient.reviewRefund(orderID: orders[0].orderId, answer: Self.answer(1)) == .recorded)
            #expect(fixture.google.answeredReviews["prt-1"]?.calls == 1)

            // Google took it, the reply was lost: sent again, answered OK, and Google still holds one answer.
            fixture.google.setFaults(GoogleFaults(lostAnswers: 1))
            #expect(await patient.reviewRefund(orderID: orders[1].orderId, answer: Self.answer(2)) == .recorded)
            let twice = try #require(fixture.google.answeredReviews["prt-2"])
            #expect(twice.calls == 2 && twice.bodies.count == 1 && twice.preference == "DECLINE")

            fixture.google.setFaults(GoogleFaults(failures: [500, 500, 500]))
            if case .unconfirmed = await patient.reviewRefund(orderID: orders[2].orderId, answer: Self.answer(3)) {
            } else {
                Issue.record("three 500s are not unconfirmed")
            }
            // A 500 that may have been taken, then 503s that were not: still unconfirmed, never "not sent".
            fixture.google.setFaults(GoogleFaults(failures: [500, 503, 503]))
            if case .unconfirmed(let why) = await patient.reviewRefund(orderID: orders[2].orderId, answer: Self.answer(3)) {
                #expect(why.contains("an earlier try may have reached Google"))
            } else {
                Issue.record("a 500 then 503s is not unconfirmed")
            }
            #expect(fixture.google.answeredReviews["prt-3"] == nil)

            // The account may read orders but not act on them: Google refuses before taking anything.
            fixture.google.setFaults(GoogleFaults())
            fixture.google.update { world in
                let accounts = world.packages[GoogleClientFixture.packageName].map { Array($0.serviceAccounts.keys) }
                world.packages[GoogleClientFixture.packageName]?.viewOnlyAccounts = accounts
            }
            #expect(await patient.checkAnswering() != .notRefused)
            if case .notTaken(401, let why) = await patient.reviewRefund(orderID: orders[3].orderId, answer: Self.answer(4)) {
                #expect(why.contains("permissionDenied"))
            } else {
                Issue.record("a view-only account's answer is not 'not taken' with its 401")
            }
            fixture.google.update { world in world.packages[GoogleClientFixture.packageName]?.viewOnlyAccounts = nil }
            #expect(await patient.checkAnswering() == .notRefused, "the probe is let through and refused for its order alone")
            #expect(fixture.google.answeredReviews.count == 2, "the probe answered nothing")
        }
        // Nothing listening: the request never left.
        let http = try HTTPClient(configuration: .init(timeout: .seconds(5), protocolPreference: .http1))
        defer { http.shutdown() }
        let key = try GoogleClientFixture.keyFile(tokenBase: "http://127.0.0.1:9")
        let unreachable = OrdersClient(
            packageName: GoogleClientFixture.packageName, baseURL: "http://127.0.0.1:9", tokens: AccessTokenProvider(key: key, http: http),
            http: http,
            retries: 0)
        if case .notTaken(nil, _) = await unreachable.reviewRefund(orderID: "GPA.1", answer: Self.answer(1)) {
        } else {
            Issue.record("a request that never left is not 'not taken'")
        }
    }

    @Test("the simulator checks the body as Google describes it: required fields, the preference's values, the share's range, 1,000 events, types")
    func validation() async throws {
        let order = Self.order(1, notified: Date())
        try await GoogleClientFixture.with(orders: [order]) { fixture in
            let token = try await AccessTokenProvider(key: try fixture.keyFile(), http: fixture.http).token()
            func send(_ body: String) async throws -> Int {
                let url =
                    fixture.baseURL + "/androidpublisher/v3/applications/\(GoogleClientFixture.packageName)/orders/\(order.orderId):reviewrefund"
                return try await fixture.http.send(
                    HTTPRequest(
                        method: .post, url: url, headers: ["Authorization": "Bearer " + token, "Content-Type": "application/json"],
                        body: Array(body.utf8))
                ).status
            }
            let event = #"{"consumptionTime":"2026-10-01T10:00:00Z","location":{"regionCode":"CH"}}"#
            let refused = [
                #"{"refundPreference":"DECLINE","sampleContentProvided":false}"#,
                #"{"pendingRefundToken":"prt-1","sampleContentProvided":false}"#,
                #"{"pendingRefundToken":"prt-1","refundPreference":"REFUND_PREFERENCE_UNSPECIFIED","sampleContentProvided":false}"#,
                #"{"pendingRefundToken":"prt-1","refundPreference":"DECLINE"}"#,
                #"{"pendingRefundToken":"prt-1","refundPreference":"DECLINE","sampleContentProvided":0}"#,
                #"{"pendingRefundToken":"prt-1","refundPreference":"DECLINE","sampleContentProvided":false,"consumptionPercentageMilliunits":100001}"#,
                #"{"pendingRefundToken":"prt-1","refundPreference":"DECLINE","sampleContentProvided":false,"consumptionPercentageMilliunits":true}"#,
                #"{"pendingRefundToken":"prt-1","refundPreference":"DECLINE","sampleContentProvided":false,"consumptionUsageEvents":["#
                    + Array(repeating: event, count: 1001).joined(separator: ",") + "]}",
                #"{"pendingRefundToken":"prt-1","refundPreference":"DECLINE","sampleContentProvided":false,"consumptionUsageEvents":[{"consumptionTime":"yesterday"}]}"#,
                #"{"pendingRefundToken":"prt-1","refundPreference":"DECLINE","sampleContentProvided":false,"consumptionUsageEvents":[{"location":{"locality":"Bern"}}]}"#,
                #"{"pendingRefundToken":"prt-1","refundPreference":"DECLINE","sampleContentProvided":false,"deliveryStatus":"DELIVERED"}"#,
            ]
            for body in refused { #expect(try await send(body) == 400, "\(body.prefix(160))") }
            #expect(fixture.google.answeredReviews.isEmpty)
            let accepted =
                #"{"pendingRefundToken":"prt-1","refundPreference":"NEUTRAL","sampleContentProvided":true,"consumptionPercentageMilliunits":100000,"consumptionUsageEvents":["#
                + Array(repeating: event, count: 1000).joined(separator: ",") + "]}"
            #expect(try await send(accepted) == 200)
            #expect(fixture.google.answeredReviews["prt-1"]?.usageEvents == 1000)
        }
        // clawback's own answer keeps Google's bounds whatever the game reports.
        let many = (0..<1_500).map {
            RefundReviewAnswer.UsageEvent(time: nil, description: String(repeating: "x", count: 6_000), obfuscatedAccountId: "a\($0)")
        }
        let capped = RefundReviewAnswer(
            pendingRefundToken: "t", preference: .neutral, sampleContentProvided: false, consumedMilliunits: 250_000, usageEvents: many)
        #expect(capped.consumptionUsageEvents?.count == 1000 && capped.consumptionUsageEvents?.last?.obfuscatedAccountId == "a1499")
        #expect(capped.consumptionUsageEvents?.allSatisfy { ($0.consumptionItemDescription?.count ?? 0) == 5000 } == true)
        #expect(capped.consumptionPercentageMilliunits == 100_000)
    }
}
