import Crypto
public import Foundation

/// One numbered schema change from Migrations/NNNN_name.sql.
public struct Migration: Sendable, Equatable {
    public let version: Int
    public let name: String
    public let sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// SHA-256 of the file's text, hex: recorded when applied, compared on every later run, so a file
    /// changed after it was applied is noticed instead of silently diverging from the database.
    public var checksum: String { SHA256.hash(data: Array(sql.utf8)).map { String(format: "%02x", $0) }.joined() }

    /// Checksums of earlier texts of this file that differ from today's in comments only, reviewed by hand:
    /// a database that recorded one of them is current, and its record is brought up to today's checksum.
    /// Anything else that changed is still refused.
    public var revisedComments: Set<String> { Self.commentRevisions[version] ?? [] }

    static let commentRevisions: [Int: Set<String>] = [
        // 0001's header pointed at a design document outside the repository.
        1: ["5ed694fce39c52fe9e6f602b5e90b5a42eef6a180737072b136f55e6dff51936"]
    ]

    /// `0007_partition_creation_lock`: the file's name without `.sql`, as messages name a migration.
    public var stem: String { Self.stem(version: version, name: name) }

    static func stem(version: Int, name: String) -> String { String(format: "%04d_", version) + name }

    /// Whether `recorded` is this file's checksum, today's or that of a comment-only revision.
    func matches(recorded: String) -> Bool { recorded == checksum || revisedComments.contains(recorded) }
}

/// The state of one migration in a database.
public struct MigrationStatus: Sendable, Equatable {
    public enum State: String, Sendable {
        /// Applied, and the file is unchanged since.
        case applied
        /// Not applied yet.
        case pending
        /// Applied, but the file's checksum differs from the one recorded.
        case changed
        /// Recorded in the database, but this build does not know it (the database is newer).
        case unknown
    }

    public let version: Int
    public let name: String
    public let state: State
    public let appliedAt: Date?

    public var stem: String { Migration.stem(version: version, name: name) }
}

/// Why migrating refused to go on.
public enum MigrationError: Error, Sendable, CustomStringConvertible {
    case changedAfterApply(version: Int, name: String, recorded: String, current: String)
    case unknownInDatabase(version: Int, name: String)

    public var description: String {
        switch self {
        case .changedAfterApply(let version, let name, let recorded, let current):
            "migration \(Migration.stem(version: version, name: name)).sql was changed after it was applied "
                + "(recorded checksum \(recorded.prefix(12))…, file \(current.prefix(12))…); "
                + "restore the released file and put the change in a new migration"
        case .unknownInDatabase(let version, let name):
            "the database has migration \(Migration.stem(version: version, name: name)) which this clawback does not know; "
                + "the database was migrated by a newer clawback: upgrade this one"
        }
    }
}
