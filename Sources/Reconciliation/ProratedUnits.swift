/// How a prorated clawback is rounded to whole units.
public enum RoundingRule: String, Sendable, CaseIterable {
    /// To the nearest unit, halves up (the default): 600 gems × 33.3335% = 200.001 → 200; × 0.25% of 2 = 0.005 → 0.
    case nearestHalfUp = "nearest"
    /// Never take back a fraction: in the player's favour.
    case down
    /// Always take back a started unit: in the studio's favour.
    case up
    /// To the nearest, halves to even (banker's rounding).
    case nearestHalfEven = "nearest-even"
}

/// Money and unit math in integers only: no floating point touches a clawback.
public enum ProratedUnits {
    /// `units × percentageMilli / 100000`, rounded by `rule`. A percentage outside 0...100000 is clamped:
    /// never more than the grant, never less than nothing.
    public static func compute(units: Int64, percentageMilli: Int32, rule: RoundingRule) -> Int64 {
        let percentage = Int64(min(max(percentageMilli, 0), 100_000))
        let (numerator, overflow) = units.multipliedReportingOverflow(by: percentage)
        guard !overflow else {
            // Units beyond 9.2e13: divide first (exact enough at that size).
            return units / 100_000 * percentage + (units % 100_000) * percentage / 100_000
        }
        let quotient = numerator / 100_000
        let remainder = numerator % 100_000
        switch rule {
        case .down: return quotient
        case .up: return remainder > 0 ? quotient + 1 : quotient
        case .nearestHalfUp: return remainder * 2 >= 100_000 ? quotient + 1 : quotient
        case .nearestHalfEven:
            if remainder * 2 > 100_000 { return quotient + 1 }
            if remainder * 2 < 100_000 { return quotient }
            return quotient % 2 == 0 ? quotient : quotient + 1
        }
    }
}
