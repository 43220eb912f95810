/// Why a store refunded, where it states a code for it: the App Store's `revocationReason` (an integer in its
/// JSON; Google Play states its reasons as the refund's kind instead). One type for everyone who shows it:
/// the store's client decodes it, the rules send a code this version does not know to a person, finance's
/// reports and `clawback inspect` say what it means.
public enum RevocationReason: Sendable, Equatable, CustomStringConvertible {
    /// 0: refunded for another reason, for example an accidental purchase.
    case other
    /// 1: refunded because of an actual or perceived issue within the app.
    case issueWithinApp
    case unknown(Int32)

    public init(rawValue: Int32) {
        switch rawValue {
        case 0: self = .other
        case 1: self = .issueWithinApp
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: Int32 {
        switch self {
        case .other: 0
        case .issueWithinApp: 1
        case .unknown(let value): value
        }
    }

    /// What the reason means, for people (finance reports, `clawback inspect`).
    public var description: String {
        switch self {
        case .other: "other reason (e.g. accidental purchase)"
        case .issueWithinApp: "actual or perceived issue within the app"
        case .unknown(let value): "code \(value), not documented by Apple"
        }
    }
}
