public import Foundation

/// How long to wait between attempts, and when to stop.
public struct RetryPolicy: Sendable {
    /// Attempts per request, the first included. Waits on a 429 are not attempts: Apple said when to
    /// come back, so they count against `maxRateLimitedWaits` and the time budget instead.
    public var maxAttempts: Int
    public var maxRateLimitedWaits: Int
    /// First backoff; doubles per attempt up to `maxDelay`, with full jitter.
    public var baseDelay: Duration
    public var maxDelay: Duration
    /// The least wait before retrying a 5000000 GeneralInternalError ("try again later").
    public var generalErrorDelay: Duration
    /// The longest a Retry-After is obeyed; a later one fails the request (it is retried by the next run).
    public var maxRetryAfter: Duration
    /// Total time one request may spend waiting and retrying.
    public var budget: Duration

    public init(
        maxAttempts: Int = 6, maxRateLimitedWaits: Int = 30, baseDelay: Duration = .milliseconds(200), maxDelay: Duration = .seconds(10),
        generalErrorDelay: Duration = .seconds(2), maxRetryAfter: Duration = .seconds(120), budget: Duration = .seconds(300)
    ) {
        self.maxAttempts = maxAttempts
        self.maxRateLimitedWaits = maxRateLimitedWaits
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.generalErrorDelay = generalErrorDelay
        self.maxRetryAfter = maxRetryAfter
        self.budget = budget
    }

    /// Jittered exponential backoff before attempt `attempt + 1` (attempt counts from 1): a random duration
    /// between zero and min(maxDelay, baseDelay × 2^(attempt-1)), so that many workers do not retry in step.
    public func backoff(afterAttempt attempt: Int, random: Double) -> Duration {
        let exponent = min(attempt - 1, 30)
        let ceiling = min(maxDelay, baseDelay * (1 << exponent))
        return ceiling * max(0, min(1, random))
    }
}

/// Reads a `Retry-After` header. Apple documents "a UNIX time, in milliseconds"; one client library reads
/// seconds; RFC 9110 allows delay-seconds or an HTTP-date. All are accepted:
/// - a number below 10^9 is a delay in seconds;
/// - a number from 10^9 to 10^11 is a UNIX time in seconds;
/// - a larger number is a UNIX time in milliseconds;
/// - otherwise an HTTP-date (`Sun, 06 Nov 1994 08:49:37 GMT`).
/// Returns how long to wait from `now` (never negative), or nil when the header is absent or unreadable.
public enum RetryAfter {
    public static func delay(_ header: String?, now: Date) -> Duration? {
        guard let text = header?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        if let number = Double(text), number.isFinite, number >= 0 {
            let seconds: Double
            switch number {
            case ..<1e9: seconds = number
            case ..<1e11: seconds = number - now.timeIntervalSince1970
            default: seconds = number / 1000 - now.timeIntervalSince1970
            }
            return milliseconds(seconds)
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: text) else { return nil }
        return milliseconds(date.timeIntervalSince(now))
    }

    /// A delay of `seconds`, at most about 31 years: a header asking for longer (or for a date millennia
    /// away) must fail the request as "beyond the limit", not trap converting to Int64.
    static func milliseconds(_ seconds: Double) -> Duration {
        .milliseconds(Int64(min(max(0, seconds), 1e9) * 1000))
    }
}
