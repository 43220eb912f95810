import AppStore
import AppStoreSimulator
import Foundation
import HTTP
import Testing

@Suite("App Store Server API client against the simulator")
struct APIClientTests {
    @Test("Get Transaction Info: the signed answer verifies and shows the refund; a reversed refund shows none")
    func transactionInfo() async throws {
        let refund = RefundRecord(
            date: Date(timeIntervalSinceNow: -86_400 * 5).roundedToMilliseconds, reason: 1, type: "REFUND_PRORATED", percentage: 33_333)
        let reversed = RefundRecord(date: Date(timeIntervalSinceNow: -86_400 * 9), reversedDate: Date(timeIntervalSinceNow: -86_400 * 2))
        try await SimulatorFixture.with(transactions: [
            SimulatorFixture.purchase("1000000001"), SimulatorFixture.purchase("1000000002", refund: refund),
            SimulatorFixture.purchase("1000000003", refund: reversed),
        ]) { fixture in
            let client = fixture.client()
            let app = AppExpectation(bundleID: SimulatorFixture.bundleID, environment: .production)

            let plain = try await fixture.verifier.verifyTransaction(
                try await client.transactionInfo("1000000001", environment: .production), for: app)
            #expect(plain.transactionID == "1000000001")
            #expect(plain.price == 4990)
            #expect(!plain.isRevoked)

            let refunded = try await fixture.verifier.verifyTransaction(
                try await client.transactionInfo("1000000002", environment: .production), for: app)
            #expect(refunded.revocationType == .refundProrated)
            #expect(refunded.revocationPercentage == 33_333)
            #expect(refunded.revocationReasonValue == .issueWithinApp)
            #expect(refunded.revocationDate?.appleMilliseconds == refund.date.appleMilliseconds)

            let back = try await fixture.verifier.verifyTransaction(
                try await client.transactionInfo("1000000003", environment: .production), for: app)
            #expect(!back.isRevoked)
        }
    }

    @Test("environment routing: production first, sandbox on 4040010; a known environment is asked alone")
    func routing() async throws {
        try await SimulatorFixture.with(transactions: [
            SimulatorFixture.purchase("1000000010"), SimulatorFixture.purchase("1000000011", environment: "Sandbox"),
        ]) { fixture in
            let client = fixture.client()
            guard case .found(_, let production) = try await client.lookUpTransaction("1000000010", knownEnvironment: nil) else {
                Issue.record("production transaction not found")
                return
            }
            #expect(production == .production)
            guard case .found(_, let sandbox) = try await client.lookUpTransaction("1000000011", knownEnvironment: nil) else {
                Issue.record("sandbox transaction not found by fallback")
                return
            }
            #expect(sandbox == .sandbox)
            #expect(try await client.lookUpTransaction("1000009999", knownEnvironment: nil) == .notFound(environments: [.production, .sandbox]))
            let before = client.statistics.requests
            #expect(try await client.lookUpTransaction("1000000011", knownEnvironment: .production) == .notFound(environments: [.production]))
            #expect(client.statistics.requests == before + 1)
        }
    }

    @Test("Transaction History v2 is read to the last page, with filters repeated on every page")
    func historyPaging() async throws {
        var purchases = (0..<45).map { SimulatorFixture.purchase(String(1_000_000_100 + $0), daysAgo: 50 - Double($0), customer: "c-1") }
        purchases += (0..<5).map {
            SimulatorFixture.purchase(String(1_000_000_200 + $0), customer: "c-1", product: "sub", type: "Auto-Renewable Subscription")
        }
        try await SimulatorFixture.with(transactions: purchases) { fixture in
            let client = fixture.client()
            var pages: [Int] = []
            var ids: [String] = []
            try await client.transactionHistory(
                "1000000100", environment: .production, query: TransactionHistoryQuery(productTypes: [.consumable])
            ) { page in
                pages.append(page.count)
                for jws in page { ids.append(try await fixture.verifier.verifyTransaction(jws, for: AppExpectation()).transactionID ?? "") }
            }
            #expect(pages == [20, 20, 5])
            #expect(ids == purchases.prefix(45).map(\.transactionId))
        }
    }

    @Test("Refund History v2 pages to the end, and a stored revision returns only newer refunds")
    func refundPaging() async throws {
        let purchases = (0..<25).map { index in
            SimulatorFixture.purchase(
                String(1_000_000_300 + index), daysAgo: 60, customer: "c-2",
                refund: RefundRecord(date: Date(timeIntervalSinceNow: -86_400 * (40 - Double(index)))))
        }
        try await SimulatorFixture.with(
            transactions: purchases + [SimulatorFixture.purchase("1000000399", daysAgo: 10, customer: "c-2")]
        ) { fixture in
            let client = fixture.client()
            let first = try await client.refundHistory("1000000399", environment: .production)
            #expect(first.signedTransactions.count == 25)
            #expect(client.statistics.requests == 2)

            // A new refund after the stored revision.
            var late = SimulatorFixture.purchase("1000000399", daysAgo: 10, customer: "c-2")
            late.refund = RefundRecord(date: Date(timeIntervalSinceNow: -3600))
            fixture.simulator.update([.transaction(late)])
            let next = try await client.refundHistory("1000000399", environment: .production, since: first.revision)
            #expect(next.signedTransactions.count == 1)
            let transaction = try await fixture.verifier.verifyTransaction(try #require(next.signedTransactions.first), for: AppExpectation())
            #expect(transaction.transactionID == "1000000399")
        }
    }

    @Test("Get Notification History lists REFUND and REFUND_REVERSED across pages; their nested transactions verify")
    func notificationHistory() async throws {
        let purchases = (0..<30).map { (index: Int) -> TransactionRecord in
            let refunded = Date(timeIntervalSinceNow: Double(-86_400 * 30 + index * 600))
            let reversed: Date? = index % 10 == 0 ? Date(timeIntervalSinceNow: Double(-86_400 * 10 + index)) : nil
            let refund = RefundRecord(date: refunded, reversedDate: reversed)
            return SimulatorFixture.purchase(String(1_000_000_400 + index), daysAgo: 60, refund: refund)
        }
        try await SimulatorFixture.with(transactions: purchases) { fixture in
            let client = fixture.client()
            let window = (start: Date(timeIntervalSinceNow: -86_400 * 90).appleMilliseconds, end: Date().appleMilliseconds)
            let app = AppExpectation(bundleID: SimulatorFixture.bundleID, environment: .production, appAppleID: 6_450_000_001)
            var refunds = 0
            var revokedInRefunds = 0
            var pages = 0
            try await client.notificationHistory(
                NotificationHistoryRequest(startDate: window.start, endDate: window.end, notificationType: NotificationType.refund),
                environment: AppStoreEnvironment.production
            ) { items in
                pages += 1
                for item in items {
                    let verified = try await fixture.verifier.verifyNotification(item.signedPayload, for: app)
                    #expect(verified.notification.notificationType == .refund)
                    refunds += 1
                    if verified.transaction?.isRevoked == true { revokedInRefunds += 1 }
                }
            }
            #expect(refunds == 30)
            #expect(revokedInRefunds == 30)
            #expect(pages == 2)
            var reversals: [TransactionPayload] = []
            try await client.notificationHistory(
                NotificationHistoryRequest(startDate: window.start, endDate: window.end, notificationType: NotificationType.refundReversed),
                environment: AppStoreEnvironment.production
            ) { items in
                for item in items {
                    reversals.append(try #require(try await fixture.verifier.verifyNotification(item.signedPayload, for: app).transaction))
                }
            }
            #expect(reversals.count == 3)
            #expect(reversals.allSatisfy { !$0.isRevoked })
        }
    }

    @Test("a 429 pauses the bucket until Retry-After and every request still succeeds")
    func rateLimited() async throws {
        // Apple allows 2/s here; the client believes 1,000/s. Eight requests sent at once overrun the bucket
        // unless they reach the server more than 0.5 s apart, which a machine loaded by the rest of the suite
        // can do: then the burst is tried again with a fresh bucket, up to five times. The assertions hold
        // for the burst that overran it.
        for _ in 0..<5 {
            let overran = try await SimulatorFixture.with(
                transactions: [SimulatorFixture.purchase("1000000500")], rateLimits: ["transactionInfo": 2]
            ) { fixture in
                let client = fixture.client(rates: .init(overrides: [.transactionInfo: 1000]))
                let started = ContinuousClock.now
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<8 { group.addTask { _ = try await client.transactionInfo("1000000500", environment: .production) } }
                    try await group.waitForAll()
                }
                let statistics = client.statistics
                guard statistics.rateLimited > 0 else { return false }
                #expect(fixture.simulator.stats.snapshot["status.429"] == statistics.rateLimited)
                // 8 requests at 2/s from a full bucket of 2: the last can only have been admitted after 3 seconds.
                #expect(ContinuousClock.now - started >= .milliseconds(2900))
                return true
            }
            if overran { return }
        }
        Issue.record("five bursts of 8 requests never overran a bucket of 2 per second: no 429 was seen")
    }

    @Test("at a matching rate the client causes no 429 at all")
    func noSelfInflicted429() async throws {
        try await SimulatorFixture.with(transactions: [SimulatorFixture.purchase("1000000510")], rateLimits: ["transactionInfo": 20]) { fixture in
            let client = fixture.client(rates: .init(overrides: [.transactionInfo: 20]))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<30 { group.addTask { _ = try await client.transactionInfo("1000000510", environment: .production) } }
                try await group.waitForAll()
            }
            #expect(client.statistics.rateLimited == 0)
        }
    }

    @Test("retryable failures are retried until they pass: 5000001, 5000000, resets, truncated bodies")
    func retryable() async throws {
        for (name, plan) in [
            (
                "5000001",
                {
                    var p = FaultPlan()
                    p.retryableErrorShare = 0.5
                    return p
                }()
            ),
            (
                "5000000",
                {
                    var p = FaultPlan()
                    p.internalErrorShare = 0.5
                    return p
                }()
            ),
            (
                "reset",
                {
                    var p = FaultPlan()
                    p.resetShare = 0.5
                    return p
                }()
            ),
            (
                "truncated",
                {
                    var p = FaultPlan()
                    p.truncatedShare = 0.5
                    return p
                }()
            ),
        ] {
            try await SimulatorFixture.with(
                transactions: (0..<20).map { SimulatorFixture.purchase(String(1_000_000_600 + $0)) }, faults: plan
            ) { fixture in
                let client = fixture.client()
                for index in 0..<20 {
                    let jws = try await client.transactionInfo(String(1_000_000_600 + index), environment: .production)
                    #expect(try await fixture.verifier.verifyTransaction(jws, for: AppExpectation()).transactionID == String(1_000_000_600 + index))
                }
                #expect(client.statistics.retries > 0, "\(name): nothing was retried")
            }
        }
    }

    @Test("non-retryable failures are not retried: invalid id, unknown id, malformed body, 401")
    func notRetried() async throws {
        var plan = FaultPlan()
        plan.unauthorizedBundles = ["com.locked.game"]
        let locked = AppRecord(bundleId: "com.locked.game", appAppleId: 1, issuerId: SimulatorFixture.issuerID, keys: [])
        try await SimulatorFixture.with(transactions: [SimulatorFixture.purchase("1000000700")], faults: plan, extraApps: [locked]) { fixture in
            let client = fixture.client()
            let invalid = await #expect(throws: AppStoreAPIError.self) { try await client.transactionInfo("not*valid", environment: .production) }
            #expect(invalid?.appleCode == .invalidTransactionID)
            let missing = await #expect(throws: AppStoreAPIError.self) { try await client.transactionInfo("1000000799", environment: .production) }
            #expect(missing?.isTransactionNotFound == true)
            #expect(client.statistics.requests == 2)
            #expect(client.statistics.retries == 0)

            let otherKey = fixture.client(key: .init())
            let unauthorized = await #expect(throws: AppStoreAPIError.self) {
                try await otherKey.transactionInfo("1000000700", environment: .production)
            }
            guard case .unauthorized? = unauthorized?.kind else {
                Issue.record("expected unauthorized, got \(String(describing: unauthorized))")
                return
            }
            // One fresh token is tried after a 401, no more.
            #expect(otherKey.statistics.requests == 2)
        }

        var malformed = FaultPlan()
        malformed.malformedShare = 1
        try await SimulatorFixture.with(transactions: [SimulatorFixture.purchase("1000000701")], faults: malformed) { broken in
            let error = await #expect(throws: AppStoreAPIError.self) {
                try await broken.client().transactionInfo("1000000701", environment: .production)
            }
            guard case .invalidResponse? = error?.kind else {
                Issue.record("expected invalidResponse")
                return
            }
        }
    }

    @Test("a server that stalls hits the timeout on every attempt and the request gives up")
    func stall() async throws {
        var plan = FaultPlan()
        plan.stallShare = 1
        plan.stallSeconds = 5
        try await SimulatorFixture.with(transactions: [SimulatorFixture.purchase("1000000800")], faults: plan) { fixture in
            let http = try HTTPClient(configuration: .init(timeout: .milliseconds(200), protocolPreference: .http1))
            let credentials = AppStoreCredentials(
                issuerID: SimulatorFixture.issuerID, keyID: SimulatorFixture.keyID, bundleID: SimulatorFixture.bundleID,
                key: SigningKey(privateKey: fixture.key))
            let client = AppStoreServerAPIClient(
                http: http, tokens: BearerTokenProvider(credentials: credentials), limiter: RateLimiter(),
                configuration: .init(baseURLs: [.production: fixture.baseURL], retry: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(10))))
            let error = await #expect(throws: AppStoreAPIError.self) { try await client.transactionInfo("1000000800", environment: .production) }
            guard case .retriesExhausted(let attempts, let last)? = error?.kind else {
                Issue.record("expected retriesExhausted")
                return
            }
            #expect(attempts == 3)
            #expect(last.contains("timedOut"))
            http.shutdown()
        }
    }

    @Test("added latency and jitter delay every answer; the client still gets it")
    func latency() async throws {
        var plan = FaultPlan()
        plan.latencyMilliseconds = 300
        plan.jitterMilliseconds = 50
        try await SimulatorFixture.with(transactions: [SimulatorFixture.purchase("1000001100")], faults: plan) { fixture in
            let client = fixture.client()
            let started = ContinuousClock.now
            _ = try await client.transactionInfo("1000001100", environment: .production)
            #expect(ContinuousClock.now - started >= .milliseconds(250))
        }
    }

    @Test("a scheduled burst of 429s makes the client wait for Retry-After, then succeed")
    func rateLimitBurst() async throws {
        var plan = FaultPlan()
        plan.rateLimitBurstEverySeconds = 1
        plan.rateLimitBurstMilliseconds = 700  // closed for the first 700 ms of every wall-clock second
        try await SimulatorFixture.with(transactions: [SimulatorFixture.purchase("1000001200")], faults: plan) { fixture in
            let client = fixture.client()
            // Each request leaves at the start of a closed spell, so it meets the burst unless the machine takes
            // 700 ms to deliver it; a few tries make that certain without depending on the machine's load.
            for _ in 0..<5 where client.statistics.rateLimited == 0 {
                let intoSecond = Date().timeIntervalSince1970.truncatingRemainder(dividingBy: 1)
                try await Task.sleep(for: .milliseconds(Int((1 - intoSecond) * 1000) + 5))
                let signed = try await client.transactionInfo("1000001200", environment: .production)
                #expect(try await fixture.verifier.verifyTransaction(signed, for: AppExpectation()).transactionID == "1000001200")
            }
            #expect(client.statistics.rateLimited > 0)
            #expect((fixture.simulator.stats.snapshot["fault.rateLimitBurst"] ?? 0) == client.statistics.rateLimited)
        }
    }

    @Test("hostile signed data from the simulator is refused by the verifier, each for its own reason")
    func hostileData() async throws {
        let expectations: [String: (VerificationError.Reason) -> Bool] = [
            "tampered": { $0 == .badSignature }, "algNone": { $0 == .unsupportedAlgorithm("none") },
            "hs256": { $0 == .unsupportedAlgorithm("HS256") }, "shortChain": { $0 == .wrongChainLength(2) },
            "longChain": { $0 == .wrongChainLength(4) },
            "wrongRoot": { if case .untrustedChain = $0 { true } else { false } },
            "noLeafOID": { if case .missingAppleExtension("leaf", _) = $0 { true } else { false } },
            "noIntermediateOID": { if case .missingAppleExtension("intermediate", _) = $0 { true } else { false } },
            "swappedOIDs": { if case .missingAppleExtension = $0 { true } else { false } },
            "expiredLeaf": { if case .certificateNotValidAtSigningTime("leaf", _, _, _) = $0 { true } else { false } },
            "notYetValidLeaf": { if case .certificateNotValidAtSigningTime("leaf", _, _, _) = $0 { true } else { false } },
            "selfSignedLeaf": { if case .untrustedChain = $0 { true } else { false } },
            "hugeX5C": { if case .invalidCertificate(let detail) = $0 { detail.contains("larger than") } else { false } },
            "otherBundle": { $0 == .bundleMismatch(expected: SimulatorFixture.bundleID, actual: "com.hostile.other") },
            "otherEnvironment": { $0 == .environmentMismatch(expected: "Production", actual: "Sandbox") },
        ]
        try await SimulatorFixture.with(transactions: [SimulatorFixture.purchase("1000000900")]) { fixture in
            let client = fixture.client()
            let app = AppExpectation(bundleID: SimulatorFixture.bundleID, environment: .production)
            #expect(Set(expectations.keys) == Set(FaultPlan.hostileKinds), "every hostile kind the simulator has is tried")
            for (kind, matches) in expectations {
                var plan = FaultPlan()
                plan.hostileShare = 1
                plan.hostileKind = kind
                fixture.simulator.setFaults(plan)
                let jws = try await client.transactionInfo("1000000900", environment: .production)
                do throws(VerificationError) {
                    _ = try await fixture.verifier.verifyTransaction(jws, for: app)
                    Issue.record("hostile \(kind) data was accepted")
                } catch {
                    #expect(matches(error.reason), "\(kind): \(error)")
                }
            }
        }
    }

    @Test("Look Up Order ID answers the order's transactions, or status 1")
    func orderLookup() async throws {
        try await SimulatorFixture.with(transactions: [SimulatorFixture.purchase("1000001000", orderID: "MK5TTTVWJH")]) { fixture in
            let client = fixture.client()
            let found = try await client.lookUpOrderID("MK5TTTVWJH")
            #expect(found.status == 0)
            #expect(found.signedTransactions?.count == 1)
            #expect(try await client.lookUpOrderID("NOPE").status == 1)
        }
    }
}

@Suite("verifyReceipt client against the simulator")
struct VerifyReceiptClientTests {
    static func receipt(_ id: String) -> String {
        Base64.encodeStandard(Array("{\n\"purchase-info\" = \"\(Base64.encodeStandard(Array("{\"transaction-id\" = \"\(id)\";}".utf8)))\";\n}".utf8))
    }

    @Test("production first, sandbox on 21007; a wrong shared secret is a typed failure; refunds carry cancellation dates")
    func flow() async throws {
        let refunded = SimulatorFixture.purchase(
            "1000002001", environment: "Sandbox", refund: RefundRecord(date: Date(timeIntervalSinceNow: -3600), reason: 1), type: "Non-Consumable")
        try await SimulatorFixture.with(transactions: [refunded]) { fixture in
            let client = VerifyReceiptClient(
                http: fixture.http, productionURL: fixture.baseURL + "/verifyReceipt", sandboxURL: fixture.baseURL + "/sandbox/verifyReceipt",
                retry: RetryPolicy(baseDelay: .milliseconds(10)))
            let answer = try await client.verify(receipt: Self.receipt("1000002001"), sharedSecret: "s3cret")
            #expect(answer.status == 0)
            #expect(answer.environment == "Sandbox")
            let entry = try #require(answer.purchases["1000002001"])
            #expect(entry.cancellationReason == "1")
            #expect(entry.cancellationDateMilliseconds != nil)
            let error = await #expect(throws: VerifyReceiptError.self) {
                try await client.verify(receipt: Self.receipt("1000002001"), sharedSecret: "wrong")
            }
            guard case .status(21004)? = error?.kind else {
                Issue.record("expected status 21004, got \(String(describing: error))")
                return
            }
            #expect(!(error?.description.contains("wrong") ?? true))
        }
    }
}
