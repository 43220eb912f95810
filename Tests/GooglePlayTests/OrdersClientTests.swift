import AppStoreSimulator
import Foundation
import GooglePlay
import Testing
import _CryptoExtras

/// clawback's Google client against the simulator over loopback: tokens, batches, and the whole-batch
/// failure Google's contract describes.
@Suite("Google Play: tokens and the Orders API")
struct OrdersClientTests {
    static let states = ["PROCESSED", "REFUNDED", "PARTIALLY_REFUNDED", "CANCELED", "PENDING_REFUND"]

    @Test("a service account's assertion buys a token, kept until it nears its end; a key Google does not list gets none, and nothing is answered")
    func tokens() async throws {
        try await GooglePlayFixture.with(orders: [GooglePlayFixture.order(1)]) { fixture in
            let provider = AccessTokenProvider(key: try fixture.keyFile(), http: fixture.http)
            let first = try await provider.token()
            #expect(try await provider.token() == first)
            #expect(fixture.requests("google.token") == 1)

            // The same email, another key: Google refuses the assertion.
            let forged = try fixture.keyFile(key: try _RSA.Signing.PrivateKey(keySize: .bits2048))
            await #expect(throws: GooglePlayError.self) { try await AccessTokenProvider(key: forged, http: fixture.http).token() }
            let answers = try await fixture.orders(key: forged).orders([GooglePlayFixture.order(1).orderId])
            guard case .unanswered(let reason) = answers[GooglePlayFixture.order(1).orderId] else {
                Issue.record("a refused token answered \(String(describing: answers))")
                return
            }
            #expect(reason.contains("invalid_grant"))
        }
    }

    @Test("a revoked token is replaced once, and the call answered")
    func revokedToken() async throws {
        let order = GooglePlayFixture.order(7)
        try await GooglePlayFixture.with(orders: [order]) { fixture in
            let client = try fixture.orders()
            #expect(await client.orders([order.orderId]) == [order.orderId: .order(order.order)])
            fixture.google.revokeTokens()
            #expect(await client.orders([order.orderId]) == [order.orderId: .order(order.order)])
            #expect(fixture.requests("google.token") == 2)
        }
    }

    @Test("unknown and foreign orders in a batch are found by halving it: every other order still gets Google's answer, matched by id")
    func wholeBatchFailure() async throws {
        let known = (0..<300).map { GooglePlayFixture.order($0, state: Self.states[$0 % Self.states.count]) }
        let foreign = GooglePlayFixture.order(900, packageName: "com.other.game")
        try await GooglePlayFixture.with(
            orders: known + [foreign], extraPackages: [GooglePackageRecord(packageName: "com.other.game", serviceAccounts: [:])]
        ) { fixture in
            let unknown = ["GPA.0000-0000-0000-00001", "GPA.0000-0000-0000-00002", "not an order id & such"]
            var asked = known.map(\.orderId) + unknown + [foreign.orderId]
            asked.insert(known[5].orderId, at: 100)  // asked twice: once
            let answers = try await fixture.orders().orders(asked)
            #expect(answers.count == known.count + unknown.count + 1)
            for record in known { #expect(answers[record.orderId] == .order(record.order)) }
            for id in unknown + [foreign.orderId] { #expect(answers[id] == .notFound) }
            // 4 bad ids among 304: at most 2·4·log2(304) calls beyond the first.
            #expect(fixture.requests("google.orders.batchGet") + fixture.requests("google.orders.get") <= 1 + 2 * 4 * 9)
        }
    }

    @Test("more than 1,000 orders are asked 1,000 at a time, each batch's long query sent as Google's clients send it")
    func largeBatches() async throws {
        let known = (0..<2_100).map { GooglePlayFixture.order($0) }
        try await GooglePlayFixture.with(orders: known) { fixture in
            let answers = try await fixture.orders().orders(known.map(\.orderId))
            #expect(answers.count == known.count)
            #expect(known.allSatisfy { answers[$0.orderId] == .order($0.order) })
            #expect(fixture.requests("google.orders.batchGet") == 3)
        }
    }

    @Test("an account Google does not let read the package gets no answer, never 'not found'")
    func permissionDenied() async throws {
        let order = GooglePlayFixture.order(3, packageName: "com.other.game")
        try await GooglePlayFixture.with(
            orders: [order],
            extraPackages: [GooglePackageRecord(packageName: "com.other.game", serviceAccounts: [:])]
        ) { fixture in
            let answers = try await fixture.orders(packageName: "com.other.game").orders([order.orderId, "GPA.1"])
            #expect(answers.values.allSatisfy { if case .unanswered = $0 { true } else { false } })
        }
    }
}
