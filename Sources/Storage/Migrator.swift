import Foundation
public import Logging
import Postgres

/// Applies the numbered migrations in order, each in its own transaction, and records them with their
/// checksums in `clawback.schema_migrations`.
///
/// Safe to run from several processes at once (a transaction-scoped advisory lock serialises them), and
/// safe to rerun (applied migrations are skipped). Refuses to go on when an applied file has changed or the
/// database knows a migration this build does not.
public struct Migrator: Sendable {
    public let migrations: [Migration]
    let logger: Logger

    /// Serialises migrators across processes; transaction-scoped, so it can never be left behind.
    static let lockKey = LockKey(name: "clawback.migrate")

    public init(migrations: [Migration] = Migration.embedded, logger: Logger = Logger(label: "clawback.migrate")) {
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.logger = logger
    }

    /// Every known and every recorded migration with its state, in version order.
    public func status(on connection: DatabaseConnection) throws -> [MigrationStatus] {
        let recorded = try appliedMigrations(on: connection)
        var statuses: [MigrationStatus] = migrations.map { migration in
            guard let applied = recorded[migration.version] else {
                return MigrationStatus(version: migration.version, name: migration.name, state: .pending, appliedAt: nil)
            }
            let state: MigrationStatus.State = migration.matches(recorded: applied.checksum) ? .applied : .changed
            return MigrationStatus(version: migration.version, name: migration.name, state: state, appliedAt: applied.at)
        }
        let known = Set(migrations.map(\.version))
        for (version, applied) in recorded where !known.contains(version) {
            statuses.append(MigrationStatus(version: version, name: applied.name, state: .unknown, appliedAt: applied.at))
        }
        return statuses.sorted { $0.version < $1.version }
    }

    /// Applies every pending migration. Returns the ones it applied (empty when the schema was current).
    @discardableResult
    public func migrate(on connection: DatabaseConnection) throws -> [Migration] {
        try createBookkeeping(on: connection)
        try refuseDivergence(on: connection)
        var applied: [Migration] = []
        for migration in migrations {
            let didApply = try retryingLockTimeouts(migration, on: connection) { connection -> Bool in
                try connection.query("SELECT pg_advisory_xact_lock(\(Self.lockKey.value))")
                // Checked again under the lock: another process may have applied it meanwhile.
                let already = try connection.query(
                    "SELECT checksum FROM clawback.schema_migrations WHERE version = \(migration.version)"
                ).first
                if let already {
                    let recorded = try already.decode(String.self, at: 0)
                    guard migration.matches(recorded: recorded) else { throw divergence(migration, recorded: recorded) }
                    if recorded != migration.checksum {
                        try connection.execute(
                            "UPDATE clawback.schema_migrations SET checksum = \(migration.checksum) WHERE version = \(migration.version)")
                    }
                    return false
                }
                try connection.executeScript(unsafeSQL: migration.sql)
                try connection.execute(
                    """
                    INSERT INTO clawback.schema_migrations (version, name, checksum)
                    VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                    """)
                return true
            }
            if didApply {
                logger.info("applied migration", metadata: ["migration.version": "\(migration.version)", "migration.name": "\(migration.name)"])
                applied.append(migration)
            }
        }
        try revokePublicExecute(on: connection)
        return applied
    }

    /// Runs one migration's transaction, again after a short pause when it gave up waiting for a lock: a
    /// migration that changes the grants table waits only briefly (its own `lock_timeout`), so that the
    /// game's purchases never queue behind it for long; five tries, then the timeout (55P03, exit 69:
    /// nothing changed, rerun later).
    private func retryingLockTimeouts<T>(
        _ migration: Migration, on connection: DatabaseConnection, _ body: (DatabaseConnection) throws -> T
    ) throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try connection.withTransaction(body)
            } catch let error as PostgresError where error.sqlState == "55P03" && attempt < 5 {
                logger.notice(
                    "a migration gave up waiting for a lock; trying again",
                    metadata: ["migration.version": "\(migration.version)", "attempt": "\(attempt)"])
                Thread.sleep(forTimeInterval: Double(attempt) * 0.5)
            }
        }
    }

    /// PostgreSQL lets every role (PUBLIC) execute a new function. 0005's `ALTER DEFAULT PRIVILEGES IN SCHEMA
    /// clawback REVOKE EXECUTE ... FROM PUBLIC` could not change that (a per-schema default only adds to the
    /// global one), so 0006's `clawback.units_consumed` was executable by the game's role. Every migrate
    /// therefore revokes it from every function of the schema: the game's role keeps only what is granted to
    /// it by name (its three functions), whatever later migrations create.
    /// Under the migrators' lock: two migrators revoking at once would update the same catalog rows
    /// ("tuple concurrently updated").
    private func revokePublicExecute(on connection: DatabaseConnection) throws {
        try connection.withTransaction { connection in
            try connection.query("SELECT pg_advisory_xact_lock(\(Self.lockKey.value))")
            try connection.execute("REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA clawback FROM PUBLIC")
        }
    }

    private func createBookkeeping(on connection: DatabaseConnection) throws {
        try connection.withTransaction { connection in
            try connection.query("SELECT pg_advisory_xact_lock(\(Self.lockKey.value))")
            try connection.executeScript(
                unsafeSQL: """
                    CREATE SCHEMA IF NOT EXISTS clawback;
                    CREATE TABLE IF NOT EXISTS clawback.schema_migrations (
                        version    integer     PRIMARY KEY,
                        name       text        NOT NULL,
                        checksum   text        NOT NULL,
                        applied_at timestamptz NOT NULL DEFAULT now(),
                        applied_by text        NOT NULL DEFAULT current_user
                    );
                    """)
        }
    }

    private func refuseDivergence(on connection: DatabaseConnection) throws {
        let recorded = try appliedMigrations(on: connection)
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        for (version, applied) in recorded.sorted(by: { $0.key < $1.key }) {
            guard let migration = known[version] else {
                throw MigrationError.unknownInDatabase(version: version, name: applied.name)
            }
            if !migration.matches(recorded: applied.checksum) { throw divergence(migration, recorded: applied.checksum) }
        }
    }

    private func divergence(_ migration: Migration, recorded: String) -> MigrationError {
        .changedAfterApply(version: migration.version, name: migration.name, recorded: recorded, current: migration.checksum)
    }

    private struct Applied {
        let name: String
        let checksum: String
        let at: Date
    }

    private func appliedMigrations(on connection: DatabaseConnection) throws -> [Int: Applied] {
        let exists =
            try connection.query("SELECT to_regclass('clawback.schema_migrations') IS NOT NULL").first?
            .decode(Bool.self, at: 0) ?? false
        guard exists else { return [:] }
        var result: [Int: Applied] = [:]
        for row in try connection.query("SELECT version, name, checksum, applied_at FROM clawback.schema_migrations").rows {
            result[try row.decode(Int.self, at: 0)] = Applied(
                name: try row.decode(String.self, at: 1), checksum: try row.decode(String.self, at: 2),
                at: try row.decode(Date.self, at: 3))
        }
        return result
    }
}

/// Why a command that needs clawback's schema refuses to start: the database and this binary disagree on
/// which migrations exist. Checked before any work, so an unmigrated database is named as such instead of
/// surfacing as a missing table halfway through.
public enum SchemaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong with a database whose migrations stand so, worst first: a migration this binary does
    /// not know, then one changed since it was applied, then (when `pendingIsAProblem`: every command but
    /// `migrate`) one not applied yet. Nil when nothing is.
    public init?(_ statuses: [MigrationStatus], pendingIsAProblem: Bool) {
        func stems(_ state: MigrationStatus.State) -> [String] { statuses.filter { $0.state == state }.map(\.stem) }
        let (unknown, changed, pending) = (stems(.unknown), stems(.changed), stems(.pending))
        if !unknown.isEmpty {
            self = .newerThanThisClawback(unknown: unknown)
        } else if !changed.isEmpty {
            self = .changed(changed)
        } else if pendingIsAProblem && !pending.isEmpty {
            self = .notMigrated(pending: pending)
        } else {
            return nil
        }
    }

    /// Migrations this binary ships are not applied (all of them, on a database never migrated).
    case notMigrated(pending: [String])
    /// The database has migrations this binary does not know: a newer clawback migrated it.
    case newerThanThisClawback(unknown: [String])
    /// Applied migration files differ from this binary's.
    case changed([String])

    public var description: String {
        switch self {
        case .notMigrated(let pending):
            "the database is not migrated: run `clawback migrate` (pending: \(pending.joined(separator: ", ")))"
        case .newerThanThisClawback(let unknown):
            "the database was migrated by a newer clawback (\(unknown.joined(separator: ", ")) unknown to this one): upgrade this binary"
        case .changed(let names):
            "applied migrations differ from this clawback's files (\(names.joined(separator: ", "))): see `clawback migrate --status`"
        }
    }
}

extension Migrator {
    /// Throws unless every migration this binary knows is applied, unchanged, and the database knows no other.
    public func requireCurrent(on connection: DatabaseConnection) throws {
        if let problem = SchemaError(try status(on: connection), pendingIsAProblem: true) { throw problem }
    }
}

extension Migrator {
    /// Roles other than the schema's owner that may still read or change `clawback.ledger` directly: what
    /// the advice before 0005 gave a game's consumer (`SELECT`, `UPDATE ... SET applied_at`). Such a consumer,
    /// still polling `applied_at IS NULL`, sees every entry as not applied, forever: it must be stopped and
    /// moved to claim_clawbacks and acknowledge_clawback, and the privileges revoked.
    public func legacyLedgerConsumers(on connection: DatabaseConnection) throws -> [String] {
        try connection.query(
            """
            SELECT DISTINCT g.grantee FROM information_schema.role_table_grants g
            WHERE g.table_schema = 'clawback' AND g.table_name = 'ledger' AND g.privilege_type IN ('SELECT', 'UPDATE')
              AND g.grantee <> (SELECT pg_get_userbyid(c.relowner) FROM pg_class c WHERE c.oid = 'clawback.ledger'::regclass)
              AND g.grantee NOT IN (current_user)
            ORDER BY 1
            """
        ).rows.map { try $0.decode(String.self, at: 0) }
    }
}
