import Foundation
import Locking
import Synchronization

/// The App Store Server API endpoints clawback calls, with Apple's published production rates
/// (requests per second per app; sandbox gets 10%).
public enum AppStoreEndpoint: String, Sendable, CaseIterable, CustomStringConvertible {
    case transactionInfo = "Get Transaction Info"
    case transactionHistory = "Get Transaction History"
    case refundHistory = "Get Refund History"
    case notificationHistory = "Get Notification History"
    case lookUpOrderID = "Look Up Order ID"
    case sendConsumptionInformation = "Send Consumption Information"

    public var productionRate: Double {
        switch self {
        case .transactionInfo, .transactionHistory, .notificationHistory, .sendConsumptionInformation: 50
        case .refundHistory, .lookUpOrderID: 10
        }
    }

    public var description: String { rawValue }
}

/// A token bucket per (app, environment, endpoint), shared by every worker of a process: requests are
/// spaced at the bucket's rate with a small burst, so clawback never causes a 429 itself. A 429 pauses the
/// bucket for everyone until Retry-After.
///
/// Implemented as a generic cell rate algorithm: each bucket keeps the instant its next request may go;
/// `acquire` reserves the next slot and sleeps until it, so concurrent callers get successive slots.
public final class RateLimiter: Sendable {
    public struct Key: Hashable, Sendable, CustomStringConvertible {
        public let bundleID: String
        public let environment: AppStoreEnvironment
        public let endpoint: AppStoreEndpoint

        public init(bundleID: String, environment: AppStoreEnvironment, endpoint: AppStoreEndpoint) {
            self.bundleID = bundleID
            self.environment = environment
            self.endpoint = endpoint
        }

        public var description: String { "\(bundleID)/\(environment)/\(endpoint)" }
    }

    /// Requests per second for a key: Apple's rate by default (sandbox 10%), divided by the shard count.
    public struct Rates: Sendable {
        public var overrides: [AppStoreEndpoint: Double]
        /// Shards of one run share Apple's per-app budget; each takes its share.
        public var shardCount: Int
        /// Requests that may go back to back after an idle spell. Kept small: Apple counts per second.
        public var burst: Double

        public init(overrides: [AppStoreEndpoint: Double] = [:], shardCount: Int = 1, burst: Double = 1) {
            self.overrides = overrides
            self.shardCount = max(1, shardCount)
            self.burst = max(1, burst)
        }

        public func rate(for key: Key) -> Double {
            let base = overrides[key.endpoint] ?? (key.environment == .sandbox ? key.endpoint.productionRate / 10 : key.endpoint.productionRate)
            return base / Double(shardCount)
        }
    }

    public let rates: Rates
    private let clock = ContinuousClock()
    private let next = Locked<[Key: ContinuousClock.Instant]>([:])
    private let pauses = Atomic<Int>(0)

    public init(rates: Rates = .init()) { self.rates = rates }

    /// How late a woken caller may still use its slot. A caller woken later than this (a stalled machine:
    /// many callers wake at once) takes a fresh slot instead, so a stall never turns into a burst.
    static let lateness = Duration.milliseconds(250)

    /// Waits for the next slot of `key`. Throws only when the task is cancelled.
    public func acquire(_ key: Key) async throws {
        var slot = reserve(key, now: clock.now)
        while true {
            if slot > clock.now { try await Task.sleep(until: slot, clock: clock) }
            guard let fresh = reslot(key, reserved: slot, now: clock.now) else { return }
            slot = fresh
        }
    }

    /// nil when a caller woken at `now` may still send in its `reserved` slot; otherwise a fresh slot.
    func reslot(_ key: Key, reserved: ContinuousClock.Instant, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        now - reserved <= Self.lateness ? nil : reserve(key, now: now)
    }

    /// Reserves the next slot of `key` as seen at `now`: the schedule itself, without waiting.
    func reserve(_ key: Key, now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        let interval = Duration.seconds(1 / rates.rate(for: key))
        return next.withLock { next -> ContinuousClock.Instant in
            // An idle bucket may start up to `burst` intervals in the past, no earlier.
            let earliest = now - interval * (rates.burst - 1)
            let slot = max(next[key] ?? earliest, earliest)
            next[key] = slot + interval
            return slot
        }
    }

    /// Apple said 429: nobody sends on `key` before `delay` has passed.
    public func pause(_ key: Key, for delay: Duration) {
        let until = clock.now + delay
        next.withLock { next in next[key] = max(next[key] ?? until, until) }
        pauses.add(1, ordering: .relaxed)
    }

    /// How many times a 429 paused a bucket (a metric).
    public var pauseCount: Int { pauses.load(ordering: .relaxed) }
}
