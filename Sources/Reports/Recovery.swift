public import Foundation
public import Storage

extension LedgerPosition {
    /// The outcome, or `pending`.
    public var status: String { outcome?.rawValue ?? "pending" }

    /// Whole days an unacknowledged entry has waited at `asOf` (never negative).
    public func pendingDays(asOf: Date) -> Int64 {
        Int64(max(0, asOf.timeIntervalSince(createdAt) / 86_400).rounded(.down))
    }
}

/// The figures of the summary's recovery section, per currency and product. Take-backs and give-backs are
/// kept apart so that nothing nets out of sight: what the game owed, what it took, what it let go.
public enum RecoveryFigure: String, Sendable, CaseIterable, Comparable {
    /// Every purchase whose latest entry from the report's runs is a take-back (the rest of the take-back
    /// figures split it). One entry per purchase: an earlier entry of the same purchase in the same report
    /// (a rerun's adjustment, a reversal in the same window) is not counted.
    case owed
    case recovered, partial, waived, superseded, pending
    /// Pending take-backs by age: up to 7 days, 8 to 30, over 30 (they split `pending`).
    case pendingUpTo7Days = "pending_0_7_days"
    case pending8To30Days = "pending_8_30_days"
    case pendingOver30Days = "pending_over_30_days"
    /// Every purchase whose latest entry is a give-back (Apple reversed a refund), and how it ended.
    case giveBackOwed = "give_back_owed"
    case givenBack = "given_back"
    case giveBackSuperseded = "give_back_superseded"
    case giveBackPending = "give_back_pending"

    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs) ?? 0 < allCases.firstIndex(of: rhs) ?? 0
    }

    public var isGiveBack: Bool {
        switch self {
        case .giveBackOwed, .givenBack, .giveBackSuperseded, .giveBackPending: true
        default: false
        }
    }

    /// What finance reads in the note column.
    public var note: String {
        switch self {
        case .owed: "take-backs these runs recorded: units and their value at the purchase's price"
        case .recovered: "applied in full: units taken back and their value"
        case .partial: "the player's balance covered part: units actually taken and their value"
        case .waived: "the studio chose not to take them back (each entry carries who and why)"
        case .superseded: "Apple reversed the refund before the game applied it: nothing taken, nothing owed"
        case .pending: "not applied by the game yet"
        case .pendingUpTo7Days: "pending for up to 7 days"
        case .pending8To30Days: "pending for 8 to 30 days"
        case .pendingOver30Days: "pending for over 30 days: look at the game's consumer"
        case .giveBackOwed: "give-backs these runs recorded (Apple reversed a refund): units < 0"
        case .givenBack: "given back to the player: units and their value"
        case .giveBackSuperseded: "nothing to give back: the take-back it reverses was never applied"
        case .giveBackPending: "give-backs not applied by the game yet"
        }
    }

    /// The figures one position counts in at `asOf`. Each comes with whether it sums the units the game
    /// applied (true) or the units the entry asked for (false).
    public static func figures(of position: LedgerPosition, asOf: Date) -> [(figure: RecoveryFigure, applied: Bool)] {
        if position.isTakeBack {
            switch position.outcome {
            case .applied: return [(.owed, false), (.recovered, true)]
            case .partial: return [(.owed, false), (.partial, true)]
            case .waived: return [(.owed, false), (.waived, false)]
            case .superseded: return [(.owed, false), (.superseded, false)]
            case nil:
                let days = position.pendingDays(asOf: asOf)
                let age: RecoveryFigure = days <= 7 ? .pendingUpTo7Days : days <= 30 ? .pending8To30Days : .pendingOver30Days
                return [(.owed, false), (.pending, false), (age, false)]
            }
        }
        switch position.outcome {
        case nil: return [(.giveBackOwed, false), (.giveBackPending, false)]
        case .superseded: return [(.giveBackOwed, false), (.giveBackSuperseded, false)]
        case .applied, .partial, .waived: return [(.giveBackOwed, false), (.givenBack, true)]
        }
    }
}
