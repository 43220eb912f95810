import Locking

/// How many calls a run may send to Google's Orders API, and how fast. Google counts them against the Cloud
/// project's Play Developer API quota (200,000 a day by default, or 3,000 a minute per bucket: google-play.md
/// §7), which the game's own purchase checks may share; a run that isolates many unknown orders (about
/// 2·log2(batch) calls each) must not spend it all. One allowance serves every app of a run.
public final class CallAllowance: Sendable {
    /// Calls the run may send in all (retries included); nil: no limit.
    public let budget: Int?
    /// Calls a second at most; nil: as fast as answers come.
    public let perSecond: Double?
    private let state: Locked<(used: Int, next: ContinuousClock.Instant)>

    public init(budget: Int?, perSecond: Double?) {
        self.budget = budget
        self.perSecond = perSecond.flatMap { $0 > 0 ? $0 : nil }
        state = Locked((0, ContinuousClock.now))
    }

    /// No limit and no pace (the voids feed paces itself; tests of the client alone).
    public static var unlimited: CallAllowance { CallAllowance(budget: nil, perSecond: nil) }

    /// Calls taken so far.
    public var used: Int { state.withLock { $0.used } }

    /// Takes one call, waiting for its turn at the pace: false when the budget is spent (nothing is sent).
    public func take() async -> Bool {
        let wait: Duration? = state.withLock { state in
            if let budget, state.used >= budget { return nil }
            state.used += 1
            guard let perSecond else { return .zero }
            let now = ContinuousClock.now
            let slot = max(state.next, now)
            state.next = slot + .seconds(1 / perSecond)
            return slot - now
        }
        guard let wait else { return false }
        if wait > .zero { try? await Task.sleep(for: wait) }
        return true
    }
}
