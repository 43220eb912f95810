public import Foundation

/// `timestamptz` text codec, independent of locale and of Foundation's date formatters (which are slow
/// on Linux and locale-sensitive). Input is what PostgreSQL prints with `DateStyle=ISO`; output is RFC 3339.
public enum PostgresTimestamp {
    /// Formats as `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC, microseconds, PostgreSQL's precision).
    ///
    /// A date whose microseconds do not fit 64 bits (about ±292,000 years from 1970, beyond PostgreSQL's own
    /// range too) or that is not finite formats as text no timestamp parser takes, so that the server refuses
    /// the statement with a data error (22007) naming it, instead of this process trapping on bad input.
    public static func format(_ date: Date) -> String {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        guard let totalMicros = Int64(exactly: micros) else { return "out-of-range timestamp \(date.timeIntervalSince1970) s since 1970" }
        var seconds = totalMicros.quotientRoundingDown(1_000_000)
        let fraction = totalMicros - seconds * 1_000_000
        let days = seconds.quotientRoundingDown(86_400)
        seconds -= days * 86_400
        let (year, month, day) = civil(fromDays: days)
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(seconds / 3600, 2) + ":"
            + pad(seconds / 60 % 60, 2) + ":" + pad(seconds % 60, 2) + "." + pad(fraction, 6) + "Z"
    }

    /// Parses `YYYY-MM-DD HH:MM:SS[.f…][+HH[:MM[:SS]]]` (the space may be a `T`; `Z` means UTC).
    /// Returns nil for anything else, including `infinity` and BC dates, which a grant never has.
    public static func parse(_ text: String) -> Date? {
        var scanner = DigitScanner(Array(text.utf8))
        guard let year = scanner.number(digits: 4), scanner.take("-"),
            let month = scanner.number(digits: 2), scanner.take("-"),
            let day = scanner.number(digits: 2), scanner.take(" ") || scanner.take("T"),
            let hour = scanner.number(digits: 2), scanner.take(":"),
            let minute = scanner.number(digits: 2), scanner.take(":"),
            let second = scanner.number(digits: 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var fraction = 0.0
        if scanner.take(".") {
            var scale = 0.1
            var any = false
            while let digit = scanner.digit() {
                fraction += Double(digit) * scale
                scale /= 10
                any = true
            }
            guard any else { return nil }
        }
        var offsetSeconds: Int64 = 0
        if scanner.take("Z") {
            offsetSeconds = 0
        } else if let sign = scanner.sign() {
            guard let offsetHours = scanner.number(digits: 2) else { return nil }
            var offset = offsetHours * 3600
            if scanner.take(":") {
                guard let offsetMinutes = scanner.number(digits: 2) else { return nil }
                offset += offsetMinutes * 60
                if scanner.take(":") {
                    guard let offsetSecondsPart = scanner.number(digits: 2) else { return nil }
                    offset += offsetSecondsPart
                }
            }
            offsetSeconds = sign * offset
        } else {
            return nil
        }
        guard scanner.atEnd else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = y.quotientRoundingDown(400)
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse of `daysFromCivil`.
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = z.quotientRoundingDown(146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

extension Int64 {
    /// Floor division, correct for negative values (dates before 1970).
    func quotientRoundingDown(_ divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}

private struct DigitScanner {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }

    mutating func take(_ character: Unicode.Scalar) -> Bool {
        guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { return false }
        index += 1
        return true
    }

    mutating func digit() -> Int64? {
        guard index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 else { return nil }
        defer { index += 1 }
        return Int64(bytes[index] - 0x30)
    }

    mutating func number(digits: Int) -> Int64? {
        var value: Int64 = 0
        for _ in 0..<digits {
            guard let digit = digit() else { return nil }
            value = value * 10 + digit
        }
        return value
    }

    mutating func sign() -> Int64? {
        if take("+") { return 1 }
        if take("-") { return -1 }
        return nil
    }
}
