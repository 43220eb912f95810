/// Which clawback this is: the release's semantic version, and the commit it was built from.
///
/// The commit is filled in by `git archive` (this file is marked `export-subst` in .gitattributes), which is
/// how `Jobs/release/build.sh` and the container build get their source; a binary built from a working tree
/// says so instead of naming a commit it may not match.
public enum BuildInfo {
    /// Semantic version of this release; CHANGELOG.md says what changed in it.
    public static let version = "1.1.0"

    /// The full commit hash (40 hex digits), or nil when not built from `git archive`.
    public static var commit: String? {
        let substituted = exportedCommit
        // Unsubstituted, the placeholder starts with "$Format"; git writes hex digits.
        return substituted.allSatisfy(\.isHexDigit) && !substituted.isEmpty ? substituted : nil
    }

    /// `1.1.0 (commit <40 hex digits>)`, or `1.1.0 (development build, no commit recorded)`.
    public static var description: String {
        "\(version) (\(commit.map { "commit \($0)" } ?? "development build, no commit recorded"))"
    }

    private static let exportedCommit = "$Format:%H$"
}
