import AppStoreSimulator
import Foundation
import HTTP
import Testing

@testable import GooglePlay

/// The Voided Purchases feed read whole: every page, at most 30 days back, paced under Google's quota.
@Suite("Google Play: the Voided Purchases feed")
struct VoidedPurchasesTests {
    static let now = Date()

    /// `count` refunded orders whose voids Google recorded over the last `days` days, every third one a
    /// quantity-based partial refund.
    static func voided(_ count: Int, days: Double) -> [GoogleOrderRecord] {
        (0..<count).map { index in
            var order = GoogleClientFixture.order(index, state: index % 3 == 0 ? "PARTIALLY_REFUNDED" : "REFUNDED")
            let recorded = now - days * 86_400 + Double(index) * (days * 86_400 - 120) / Double(max(count, 1))
            order.voids = [.init(recordedAt: recorded, voidedAt: recorded - 60, source: 2, reason: 7, quantity: index % 3 == 0 ? 1 : nil)]
            return order
        }
    }

    func client(_ fixture: GoogleClientFixture, callsPer30Seconds: Int = 30) throws -> VoidedPurchasesClient {
        VoidedPurchasesClient(
            packageName: GoogleClientFixture.packageName, baseURL: fixture.baseURL,
            tokens: AccessTokenProvider(key: try fixture.keyFile(), http: fixture.http), http: fixture.http, retries: 0,
            callsPer30Seconds: callsPer30Seconds)
    }

    @Test("every page is read, quantity rows included, no further back than Google keeps; the rows are Google's")
    func readsWhole() async throws {
        // 2,500 voids over 45 days: Google keeps 30 of them, in three pages of 1,000.
        let orders = Self.voided(2_500, days: 45)
        try await GoogleClientFixture.with(orders: orders) { fixture in
            let feed = try await client(fixture).voids(from: Self.now - 90 * 86_400, now: Self.now)
            #expect(feed.from >= Self.now - 30 * 86_400)
            let expected = orders.filter { ($0.voids?[0].recordedAt ?? .distantPast) >= feed.from }
            #expect(feed.rows.count == expected.count)
            #expect(feed.pages == (expected.count + 999) / 1000)
            #expect(Set(feed.rows.compactMap(\.orderId)) == Set(expected.map(\.orderId)))
            #expect(feed.rows.filter { $0.voidedQuantity == 1 }.count == expected.filter { $0.voids?[0].quantity == 1 }.count)
            let first = try #require(feed.rows.first)
            #expect(first.voidedReason == 7 && first.voidedSource == 2 && first.purchaseToken?.hasPrefix("token-") == true)
        }
    }

    @Test("a page Google does not answer fails the whole read: a feed read in part is not read")
    func partialFeedFails() async throws {
        try await GoogleClientFixture.with(orders: Self.voided(1_500, days: 20)) { fixture in
            let reader = try client(fixture)
            #expect(try await reader.voids(from: Self.now - 20 * 86_400, now: Self.now).pages == 2)
            // The first page answered, the second refused.
            fixture.google.setFaults(GoogleFaults(failures: [200, 500]))
            await #expect(throws: GooglePlayError.self) { try await reader.voids(from: Self.now - 20 * 86_400, now: Self.now) }
            #expect(fixture.requests("google.voidedPurchases") == 4)
        }
    }

    @Test("a feed whose paging never ends (a page token given twice) is not read whole, and stops at once")
    func endlessFeed() async throws {
        try await GoogleClientFixture.with(orders: Self.voided(20, days: 5)) { fixture in
            var faults = GoogleFaults()
            faults.endlessFeed = true
            fixture.google.setFaults(faults)
            let reader = try client(fixture)
            do {
                _ = try await reader.voids(from: Self.now - 10 * 86_400, now: Self.now)
                Issue.record("an endless feed was read as whole")
            } catch let error as GooglePlayError {
                #expect(error.kind == .malformedAnswer && error.message.contains("twice"))
            }
            // Two pages (a slow answer under load may be asked again): never the 10,000 pages of the cap.
            #expect(fixture.requests("google.voidedPurchases") < 10)
        }
    }

    @Test("the simulator holds Google's limits: 30 calls in 30 seconds, 30 days back, not past now, 1,000 a page")
    func limits() async throws {
        try await GoogleClientFixture.with(orders: Self.voided(10, days: 5)) { fixture in
            let token = try await AccessTokenProvider(key: try fixture.keyFile(), http: fixture.http).token()
            let base = fixture.baseURL + "/androidpublisher/v3/applications/" + GoogleClientFixture.packageName + "/purchases/voidedpurchases"
            func status(_ query: String) async throws -> Int {
                try await fixture.http.send(HTTPRequest(url: base + query, headers: ["Authorization": "Bearer " + token])).status
            }
            let nowMillis = Int64(Date().timeIntervalSince1970 * 1000)
            let started = ContinuousClock.now
            #expect(try await status("?startTime=\(nowMillis - 31 * 86_400_000)") == 400)
            #expect(try await status("?endTime=\(nowMillis + 600_000)") == 400)
            #expect(try await status("?maxResults=1001") == 400)
            #expect(try await status("?token=garbage") == 400)
            var statuses: [Int] = []
            for _ in 0..<30 { statuses.append(try await status("")) }
            let refused = statuses.filter { $0 == 429 }.count
            #expect(statuses.allSatisfy { $0 == 200 || $0 == 429 })
            if ContinuousClock.now - started < .seconds(29) {
                // All 34 calls in one 30-second window: the last four are over Google's 30.
                #expect(refused == 4 && statuses.suffix(4).allSatisfy { $0 == 429 }, "\(statuses)")
            } else {
                // A loaded machine took longer: the earliest calls left the window, so fewer were refused.
                #expect(refused <= 4, "\(statuses)")
            }
        }
    }

    @Test("a row's numbers are read as numbers or strings; a null quantity is neither a quantity nor 'the whole', and is refused")
    func rowDecoding() throws {
        let row = try JSONDecoder().decode(
            VoidedPurchase.self,
            from: Data(
                #"{"orderId":"GPA.1","purchaseToken":"t","purchaseTimeMillis":"1790000000000","voidedTimeMillis":1790000100000,"voidedSource":"2","voidedReason":7,"voidedQuantity":"2"}"#
                    .utf8))
        #expect(row.purchaseTimeMillis == 1_790_000_000_000 && row.voidedTimeMillis == 1_790_000_100_000)
        #expect(row.voidedSource == 2 && row.voidedReason == 7 && row.voidedQuantity == 2)
        let whole = try JSONDecoder().decode(VoidedPurchase.self, from: Data(#"{"purchaseToken":"t","voidedTimeMillis":"1"}"#.utf8))
        #expect(whole.voidedQuantity == nil)
        for bad in [
            #"{"purchaseToken":"t","voidedQuantity":null}"#, #"{"purchaseToken":"t","voidedReason":"seven"}"#, #"{"voidedTimeMillis":"1.5"}"#,
        ] {
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(VoidedPurchase.self, from: Data(bad.utf8)) }
        }
    }

    @Test("the client paces itself: never more calls than its quota in any window")
    func paced() async {
        let pacer = CallPacer(calls: 3, per: .milliseconds(300))
        let clock = ContinuousClock()
        var times: [ContinuousClock.Instant] = []
        for _ in 0..<7 {
            await pacer.wait()
            times.append(clock.now)
        }
        // The 4th call waits for the 1st to be 300 ms old, the 7th for the 4th.
        for index in 3..<times.count { #expect(times[index] - times[index - 3] >= .milliseconds(300)) }
    }
}
