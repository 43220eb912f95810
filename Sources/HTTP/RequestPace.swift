/// At most `perSecond` requests a second, evenly spaced: each caller is given the next free slot before it
/// waits, so callers that wait at once (the slices of a list, the workers of a run) never start together
/// beyond the pace.
public actor RequestPace {
    let interval: Duration
    private var next: ContinuousClock.Instant?

    public init(perSecond: Double) {
        interval = .nanoseconds(Int64(1e9 / max(perSecond, 0.001)))
    }

    /// Waits for this caller's slot.
    public func wait() async {
        let clock = ContinuousClock()
        let now = clock.now
        let slot = max(now, next ?? now)
        next = slot + interval
        if slot > now { try? await Task.sleep(until: slot, clock: clock) }
    }
}
