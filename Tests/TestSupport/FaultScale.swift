import Foundation

/// How hard the fault suite pushes: CI runs the short variants; `CLAWBACK_FAULTS=long` (documented in the
/// docs/testing.md) runs the long ones: more grants, more kills, longer fuzzing.
public enum FaultScale {
    public static var isLong: Bool { ProcessInfo.processInfo.environment["CLAWBACK_FAULTS"] == "long" }

    /// `short` in CI, `long` on demand.
    public static func pick<T>(short: T, long: T) -> T { isLong ? long : short }
}
