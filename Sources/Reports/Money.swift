/// Amounts for people: Apple's integer milliunits written as an exact decimal at the currency's ISO 4217
/// exponent (USD 0.99, JPY 120, BHD 0.375). Integers all the way; no floating point touches money.
public enum Money {
    /// Decimal places an unknown currency code keeps: all three of the milliunits, so nothing is lost.
    public static let unknownExponent = 3

    /// The ISO 4217 minor-unit exponent of `code`, or nil when the code is not an active ISO 4217 currency.
    public static func exponent(of code: String) -> Int? {
        if ISO4217.exponent0.contains(code) { return 0 }
        if ISO4217.exponent3.contains(code) { return 3 }
        if ISO4217.exponent4.contains(code) { return 4 }
        if ISO4217.exponent2.contains(code) { return 2 }
        return nil
    }

    /// `milli` (thousandths of the currency's major unit) at the currency's exponent, halves rounded away
    /// from zero when the exponent drops digits (2 for USD: 1995 milliunits -> "2.00").
    public static func format(milli: Int64, currency: String?) -> String {
        let exponent = currency.flatMap(exponent(of:)) ?? unknownExponent
        return decimal(milli: milli, exponent: exponent)
    }

    /// `milli` rounded to the currency's exponent (halves away from zero), still in milliunits: what a
    /// report row shows. Totals add these, so a summary always equals the sum of the rows it summarizes.
    public static func rounded(milli: Int64, currency: String?) -> Int64 {
        let exponent = currency.flatMap(exponent(of:)) ?? unknownExponent
        guard exponent < 3 else { return milli }
        let divisor = UInt64(pow10(3 - exponent))
        let (quotient, remainder) = milli.magnitude.quotientAndRemainder(dividingBy: divisor)
        let magnitude = (quotient + (remainder * 2 >= divisor ? 1 : 0)) * divisor
        // Prices are far below Int64's range; clamp rather than trap on a hand-edited row.
        let value = Int64(clamping: magnitude)
        return milli < 0 ? -value : value
    }

    static func decimal(milli: Int64, exponent: Int) -> String {
        let negative = milli < 0
        // Magnitude as UInt64 so that Int64.min cannot trap.
        var magnitude = milli.magnitude
        if exponent < 3 {
            let divisor = UInt64(pow10(3 - exponent))
            let (quotient, remainder) = magnitude.quotientAndRemainder(dividingBy: divisor)
            magnitude = quotient + (remainder * 2 >= divisor ? 1 : 0)
        }
        let scale = exponent > 3 ? 3 : exponent
        var digits = String(magnitude)
        if scale > 0 {
            if digits.count <= scale { digits = String(repeating: "0", count: scale - digits.count + 1) + digits }
            digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -scale))
        }
        // A four-decimal currency (CLF, UYW) cannot be more precise than Apple's milliunits: pad with a zero.
        if exponent > 3 { digits += String(repeating: "0", count: exponent - 3) }
        return (negative && magnitude != 0 ? "-" : "") + digits
    }

    /// `price_milli` times a prorated share in milli-percent (Apple's revocationPercentage, 100000 = 100%),
    /// in milliunits, halves rounded up. Nil when it does not fit in 64 bits (no real price comes close).
    public static func share(ofMilli price: Int64, percentageMilli: Int) -> Int64? {
        guard let product = product(price, Int64(percentageMilli)) else { return nil }
        let (quotient, remainder) = product.quotientAndRemainder(dividingBy: 100_000)
        return quotient + (remainder * 2 >= 100_000 ? 1 : 0)
    }

    /// The value of `units` of a purchase that granted `granted` units for `price` milliunits, in milliunits,
    /// halves away from zero. Nil when `granted` is not positive or the product does not fit in 64 bits.
    public static func value(ofUnits units: Int64, granted: Int64, priceMilli price: Int64) -> Int64? {
        guard granted > 0, let product = product(price, units) else { return nil }
        let (quotient, remainder) = product.quotientAndRemainder(dividingBy: granted)
        return quotient + (remainder.magnitude * 2 >= granted.magnitude ? (product < 0 ? -1 : 1) : 0)
    }

    /// `a × b`, or nil when it does not fit in 64 bits: the multiplication before a division, done wide.
    private static func product(_ a: Int64, _ b: Int64) -> Int64? {
        let (high, low) = a.multipliedFullWidth(by: b)
        guard high == 0 || high == -1 else { return nil }
        let product = Int64(bitPattern: low)
        guard (high == 0) == (product >= 0) else { return nil }
        return product
    }

    /// Apple's revocationPercentage (milli-percent) as a percentage with three decimals: 45000 -> "45.000".
    public static func percentage(milli: Int) -> String {
        decimal(milli: Int64(milli), exponent: 3)
    }

    private static func pow10(_ power: Int) -> Int {
        (0..<power).reduce(1) { value, _ in value * 10 }
    }
}

/// Active ISO 4217 currency codes by minor-unit exponent (ISO 4217 list one, the maintenance agency's
/// published table). Apple's storefront currencies are a subset.
enum ISO4217 {
    static let exponent0: Set<String> = [
        "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF",
    ]
    static let exponent3: Set<String> = ["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"]
    static let exponent4: Set<String> = ["CLF", "UYW"]
    static let exponent2: Set<String> = [
        "AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT", "BGN", "BMD", "BND", "BOB", "BOV",
        "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD", "CDF", "CHE", "CHF", "CHW", "CNY", "COP", "COU", "CRC", "CUP", "CVE", "CZK",
        "DKK", "DOP", "DZD", "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP", "GEL", "GHS", "GIP", "GMD", "GTQ", "GYD", "HKD", "HNL",
        "HTG", "HUF", "IDR", "ILS", "INR", "IRR", "JMD", "KES", "KGS", "KHR", "KPW", "KYD", "KZT", "LAK", "LBP", "LKR", "LRD", "LSL",
        "MAD", "MDL", "MGA", "MKD", "MMK", "MNT", "MOP", "MRU", "MUR", "MVR", "MWK", "MXN", "MXV", "MYR", "MZN", "NAD", "NGN", "NIO",
        "NOK", "NPR", "NZD", "PAB", "PEN", "PGK", "PHP", "PKR", "PLN", "QAR", "RON", "RSD", "RUB", "SAR", "SBD", "SCR", "SDG", "SEK",
        "SGD", "SHP", "SLE", "SLL", "SOS", "SRD", "SSP", "STN", "SVC", "SYP", "SZL", "THB", "TJS", "TMT", "TOP", "TRY", "TTD", "TWD",
        "TZS", "UAH", "USD", "USN", "UYU", "UZS", "VED", "VES", "XCD", "XCG", "ZAR", "ZMW", "ZWG", "ZWL",
    ]
}
