/// Stripe's amounts are integers in the currency's minor unit (docs.stripe.com/currencies): no decimals for
/// the zero-decimal currencies, three for the three-decimal ones, two for every other.
public enum StripeCurrency {
    static let zeroDecimal: Set<String> = [
        "bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv", "xaf", "xof", "xpf",
    ]
    static let threeDecimal: Set<String> = ["bhd", "jod", "kwd", "omr", "tnd"]

    /// The digits after the decimal point of `currency`'s minor unit (Stripe's lowercase code, or ISO's).
    public static func decimals(_ currency: String) -> Int {
        let code = currency.lowercased()
        if zeroDecimal.contains(code) { return 0 }
        if threeDecimal.contains(code) { return 3 }
        return 2
    }

    /// An amount in `currency`'s minor unit, in thousandths of the currency's major unit (clawback's "milli"),
    /// exactly; nil when it would not fit.
    public static func milli(minor amount: Int64, currency: String) -> Int64? {
        let factor: Int64 =
            switch decimals(currency) {
            case 0: 1000
            case 3: 1
            default: 10
            }
        let (value, overflow) = amount.multipliedReportingOverflow(by: factor)
        return overflow ? nil : value
    }
}
