import Crypto
import Foundation
import HTTP
import Locking
import Testing

@testable import AppStore

@Suite("Bearer tokens and key files")
struct AuthTests {
    static func credentials(key: P256.Signing.PrivateKey = P256.Signing.PrivateKey()) -> AppStoreCredentials {
        AppStoreCredentials(
            issuerID: "57246542-96fe-1a63-e053-0824d011072a", keyID: "2X9R4HXF34", bundleID: "com.studio.game",
            key: SigningKey(privateKey: key))
    }

    static func decodeSegment(_ segment: Substring) throws -> [String: Any] {
        let bytes = try #require(Base64.decodeURL(segment))
        return try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test("the token has Apple's header and claims, a 5-minute life, and an ES256 signature over the key")
    func claims() throws {
        let key = P256.Signing.PrivateKey()
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        let provider = BearerTokenProvider(credentials: Self.credentials(key: key), clock: { now })
        let token = try provider.token()
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        let header = try Self.decodeSegment(parts[0])
        #expect(header["alg"] as? String == "ES256")
        #expect(header["kid"] as? String == "2X9R4HXF34")
        #expect(header["typ"] as? String == "JWT")
        let claims = try Self.decodeSegment(parts[1])
        #expect(claims["iss"] as? String == "57246542-96fe-1a63-e053-0824d011072a")
        #expect(claims["aud"] as? String == "appstoreconnect-v1")
        #expect(claims["bid"] as? String == "com.studio.game")
        #expect((claims["iat"] as? NSNumber)?.int64Value == 1_795_000_000)
        #expect((claims["exp"] as? NSNumber)?.int64Value == 1_795_000_300)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Base64.decodeURL(parts[2])))
        #expect(key.publicKey.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)))
    }

    @Test("a token is reused until a minute before it expires, then renewed")
    func reuse() throws {
        let now = Locked(Date(timeIntervalSince1970: 1_795_000_000))
        let provider = BearerTokenProvider(credentials: Self.credentials(), clock: { now.withLock { $0 } })
        let first = try provider.token()
        now.withLock { $0 += 200 }
        #expect(try provider.token() == first)
        now.withLock { $0 += 41 }  // 241 s: inside the last minute of a 300 s token
        let second = try provider.token()
        #expect(second != first)
        #expect(try provider.token() == second)
        // After invalidate() a new token is signed; ECDSA signatures are randomized, so it differs.
        provider.invalidate()
        #expect(try provider.token() != second)
    }

    @Test(
        "a key file readable by others or writable by its group is refused (group read is allowed); a private one loads; errors never quote the key")
    func keyFilePermissions() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-key-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("AuthKey_TEST.p8").path
        let pem = P256.Signing.PrivateKey().pemRepresentation
        try pem.write(toFile: path, atomically: true, encoding: .utf8)

        for mode in [0o644, 0o604, 0o660, 0o606] {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            let error = try #require(throws: CredentialError.self) { try SigningKey.load(path: path) }
            #expect(error.reason == .keyFileTooOpen(path: path, mode: String(mode, radix: 8)))
            #expect(error.description.contains("chmod 600"))
        }
        // Group read only: a Kubernetes secret mounted for a non-root container (fsGroup), or root:ssl-cert 0640.
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: path)
        #expect(throws: Never.self) { try SigningKey.load(path: path) }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        let key = try SigningKey.load(path: path)
        #expect(key.privateKey.pemRepresentation == pem)
        #expect(!key.description.contains("PRIVATE KEY"))

        let garbage = directory.appendingPathComponent("garbage.p8").path
        try "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1tYXRlcmlhbA==\n-----END PRIVATE KEY-----\n".write(
            toFile: garbage, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: garbage)
        let invalid = try #require(throws: CredentialError.self) { try SigningKey.load(path: garbage) }
        #expect(invalid.reason == .keyFileInvalid(path: garbage))
        #expect(!invalid.description.contains("c2VjcmV0"))
        let missing = try #require(throws: CredentialError.self) { try SigningKey.load(path: directory.path + "/none.p8") }
        guard case .keyFileUnreadable = missing.reason else {
            Issue.record("expected unreadable")
            return
        }
    }
}

@Suite("Retries, Retry-After and the rate limiter")
struct RetryAndRateTests {
    @Test(
        "every Apple error code has the documented retry class",
        arguments: [
            (4_000_000, AppleErrorCode.RetryClass.fail), (4_000_006, .fail), (4_000_017, .fail), (4_040_001, .fail),
            (4_040_002, .retry), (4_040_003, .fail), (4_040_004, .retry), (4_040_005, .fail), (4_040_006, .retry),
            (4_040_010, .fail), (4_290_000, .rateLimited), (5_000_000, .retryAfterDelay), (5_000_001, .retry),
            (9_999_999, .fail),
        ] as [(Int64, AppleErrorCode.RetryClass)])
    func retryClasses(code: Int64, expected: AppleErrorCode.RetryClass) {
        #expect(AppleErrorCode(rawValue: code).retryClass == expected)
    }

    @Test("an unknown code is kept, not crashed on, and says so")
    func unknownCode() {
        let code = AppleErrorCode(rawValue: 4_040_099)
        #expect(code.name == nil)
        #expect(code.description == "4040099 (unknown to this clawback)")
        #expect(AppleErrorCode.transactionIDNotFound.description == "4040010 TransactionIdNotFoundError")
    }

    @Test("Retry-After as UNIX milliseconds, UNIX seconds, delay seconds and HTTP-date")
    func retryAfterForms() {
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        #expect(RetryAfter.delay("1795000007000", now: now) == .seconds(7))
        #expect(RetryAfter.delay("1795000007", now: now) == .seconds(7))
        #expect(RetryAfter.delay("7", now: now) == .seconds(7))
        #expect(RetryAfter.delay("1794999990000", now: now) == .zero)  // already past
        #expect(RetryAfter.delay("Wed, 18 Nov 2026 11:06:47 GMT", now: now) == .seconds(7))
        #expect(RetryAfter.delay(nil, now: now) == nil)
        #expect(RetryAfter.delay("soon", now: now) == nil)
        // Absurd values do not trap: they come back as a delay far beyond any limit, which fails the request.
        for absurd in ["1e300", "9223372036854775807999", "Fri, 31 Dec 9999 23:59:59 GMT"] {
            let delay = RetryAfter.delay(absurd, now: now)
            #expect(delay.map { $0 > .seconds(86_400 * 365) } == true, "\(absurd)")
        }
    }

    @Test("backoff grows exponentially, is capped, and is jittered below the ceiling")
    func backoff() {
        let policy = RetryPolicy(baseDelay: .milliseconds(100), maxDelay: .seconds(1))
        #expect(policy.backoff(afterAttempt: 1, random: 1) == .milliseconds(100))
        #expect(policy.backoff(afterAttempt: 3, random: 1) == .milliseconds(400))
        #expect(policy.backoff(afterAttempt: 10, random: 1) == .seconds(1))
        #expect(policy.backoff(afterAttempt: 3, random: 0.5) == .milliseconds(200))
        #expect(policy.backoff(afterAttempt: 3, random: 0) == .zero)
    }

    @Test("the limiter holds 40 concurrent callers to the configured rate, and a pause holds everyone")
    func rateUnderLoad() async throws {
        let limiter = RateLimiter(rates: .init(overrides: [.transactionInfo: 100]))
        let key = RateLimiter.Key(bundleID: "b", environment: .production, endpoint: .transactionInfo)
        let clock = ContinuousClock()
        let started = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<40 { group.addTask { for _ in 0..<5 { try await limiter.acquire(key) } } }
            try await group.waitForAll()
        }
        // 200 requests at 100/s with a burst of 1: the last slot is 1.99 s after the first. A loaded machine
        // can only make it slower, never faster, so only this bound is a property (the schedule is below).
        #expect(clock.now - started >= .milliseconds(1900))

        limiter.pause(key, for: .milliseconds(500))
        let pausedAt = clock.now
        try await limiter.acquire(key)
        #expect(clock.now - pausedAt >= .milliseconds(450))
        #expect(limiter.pauseCount == 1)
    }

    @Test("the schedule: slots exactly one interval apart, a burst allowed after idling, a pause pushes them all")
    func schedule() {
        let limiter = RateLimiter(rates: .init(overrides: [.transactionInfo: 50], burst: 3))
        let key = RateLimiter.Key(bundleID: "b", environment: .production, endpoint: .transactionInfo)
        let now = ContinuousClock.now
        let slots = (0..<10).map { _ in limiter.reserve(key, now: now) }
        // An idle bucket starts up to two intervals back (burst 3): three go at once, then one per 20 ms.
        #expect(slots[0] == now - .milliseconds(40))
        #expect(zip(slots, slots.dropFirst()).allSatisfy { $1 - $0 == .milliseconds(20) })
        #expect(slots[9] - now == .milliseconds(140))
        let other = RateLimiter.Key(bundleID: "c", environment: .production, endpoint: .transactionInfo)
        #expect(limiter.reserve(other, now: now) == now - .milliseconds(40))  // buckets are independent
    }

    @Test("callers woken late by a stalled machine take fresh slots: a stall never becomes a burst")
    func stallDoesNotBurst() {
        let limiter = RateLimiter(rates: .init(overrides: [.transactionInfo: 20]))
        let key = RateLimiter.Key(bundleID: "b", environment: .production, endpoint: .transactionInfo)
        let start = ContinuousClock.now
        let reserved = (0..<30).map { _ in limiter.reserve(key, now: start) }  // 0, 50 ms, ..., 1.45 s
        // The machine stalls; every caller wakes at 1.5 s. Those within the lateness send now; the rest
        // are rescheduled one interval apart after the last reservation.
        let woken = start + .milliseconds(1500)
        var sends: [ContinuousClock.Instant] = []
        for slot in reserved {
            if let fresh = limiter.reslot(key, reserved: slot, now: woken) {
                #expect(limiter.reslot(key, reserved: fresh, now: fresh) == nil)  // on time next time
                sends.append(fresh)
            } else {
                sends.append(woken)
            }
        }
        // Slots 1.25 s to 1.45 s were late by 250 ms at most and go; so does the first fresh slot (1.5 s).
        #expect(sends.filter { $0 == woken }.count == 6)
        let sorted = sends.sorted()
        // However the sends fall, no second holds more than Apple's 20 (plus the few on-time late-comers).
        for first in sorted {
            #expect(sorted.filter { $0 >= first && $0 < first + .seconds(1) }.count <= 25)
        }
        #expect(limiter.reslot(key, reserved: start, now: start + .milliseconds(250)) == nil)
    }

    @Test("sandbox gets 10% of Apple's rate, shards divide it, overrides replace it")
    func rates() {
        let rates = RateLimiter.Rates(shardCount: 4)
        #expect(rates.rate(for: .init(bundleID: "b", environment: .production, endpoint: .transactionInfo)) == 12.5)
        #expect(rates.rate(for: .init(bundleID: "b", environment: .sandbox, endpoint: .transactionInfo)) == 1.25)
        #expect(rates.rate(for: .init(bundleID: "b", environment: .production, endpoint: .refundHistory)) == 2.5)
        let custom = RateLimiter.Rates(overrides: [.transactionInfo: 20])
        #expect(custom.rate(for: .init(bundleID: "b", environment: .production, endpoint: .transactionInfo)) == 20)
    }

    @Test("path components are percent-encoded; dot segments cannot navigate")
    func pathEncoding() {
        #expect(URLEncoding.pathSegment("2000000123") == "2000000123")
        #expect(URLEncoding.pathSegment("../../x?y=1") == "..%2F..%2Fx%3Fy%3D1")
        #expect(URLEncoding.pathSegment("..") == "%2E%2E")
        #expect(URLEncoding.pathSegment("é ") == "%C3%A9%20")
    }
}
