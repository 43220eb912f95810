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
        compute(units: units, share: RefundedShare(Int64(min(max(percentageMilli, 0), 100_000)), of: 100_000), rule: rule)
    }

    /// `units × share`, rounded by `rule`, exact whatever the sizes (a full-width product, then one
    /// division). A share outside 0...1 is clamped, and a share of nothing (a zero or negative denominator)
    /// takes nothing.
    public static func compute(units: Int64, share: RefundedShare, rule: RoundingRule) -> Int64 {
        let denominator = share.denominator
        guard denominator > 0, units > 0 else { return 0 }
        let numerator = min(max(share.numerator, 0), denominator)
        let (quotient, remainder) = denominator.dividingFullWidth(units.multipliedFullWidth(by: numerator))
        // remainder ≥ denominator − remainder: at least half (no overflow, as both are below denominator).
        switch rule {
        case .down: return quotient
        case .up: return remainder > 0 ? quotient + 1 : quotient
        case .nearestHalfUp: return remainder >= denominator - remainder ? quotient + 1 : quotient
        case .nearestHalfEven:
            if remainder > denominator - remainder { return quotient + 1 }
            if remainder < denominator - remainder { return quotient }
            return quotient % 2 == 0 ? quotient : quotient + 1
        }
    }
}
