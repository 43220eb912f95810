import Foundation
public import Reports
public import Storage

/// The exit statuses monitoring and schedulers read: sysexits(3) where one fits, one meaning for every
/// command. docs/operations.md's table is held to this list by a test.
public enum ExitStatus: Int32, Sendable, CaseIterable {
    /// Done, everything verified.
    case success = 0
    /// Command-line usage error (swift-argument-parser uses it for validation failures too).
    case usage = 64
    /// Input data is bad (an import file with bad lines, signed data that does not verify).
    case dataError = 65
    /// Nothing to work on: no run to report on, an unreadable input file.
    case noInput = 66
    /// PostgreSQL or Apple could not be reached. Retry later.
    case unavailable = 69
    /// An internal error: a bug, or a failure the program did not expect.
    case software = 70
    /// A report file could not be written (the database work is committed).
    case cannotCreateOutput = 73
    /// Finished with unverified grants or interrupted: rerun to finish.
    case temporaryFailure = 75
    /// The database refused a privilege the role clawback connects as lacks (SQLSTATE 42501): grant it.
    case permissionDenied = 77
    /// Configuration is wrong, or the database's schema is not this binary's: not migrated yet, migrated by a
    /// newer clawback, or a migration changed after it was applied.
    case configuration = 78
    /// Another run (or prune) holds the lock for the same scope.
    case locked = 85
}

extension ExitStatus {
    /// Ends the process with this status: the one way clawback exits (the command line once it is done, a
    /// second stop signal), so that every status it can end with is one of this list.
    public func exitProcess() -> Never { Foundation.exit(rawValue) }
}

/// An error that knows which exit status it means. The command line applies it once, at the top: it prints
/// the error's description and exits with its status, so no command maps errors to codes by itself.
public protocol ExitStatusCarrying: Error, CustomStringConvertible {
    var exitStatus: ExitStatus { get }
}

extension CheckingFailure: ExitStatusCarrying {
    public var exitStatus: ExitStatus {
        switch self {
        case .locked: .locked
        case .cannotResume: .usage
        case .database(let error): error.exitStatus
        case .storeUnreadable: .unavailable
        case .lockLost: .temporaryFailure
        }
    }
}

extension ConfigurationErrors: ExitStatusCarrying {
    public var exitStatus: ExitStatus { .configuration }
}

extension ReportError: ExitStatusCarrying {
    public var exitStatus: ExitStatus {
        switch self {
        case .cannotWrite, .pdf: .cannotCreateOutput
        case .noRuns: .noInput
        case .read(.database(let error)): error.exitStatus
        case .read(.badData), .badData: .dataError
        }
    }
}

extension GrantPruner.PruneError: ExitStatusCarrying {
    public var exitStatus: ExitStatus {
        switch self {
        case .busy: .locked
        case .grantsTableBusy: .temporaryFailure
        case .database(let error): error.exitStatus
        case .unexpected: .software
        }
    }
}

/// The database's schema is not the one this binary was built for: retrying cannot fix that, migrating or
/// upgrading does, so it is a configuration error (no scheduler retries it).
extension SchemaError: ExitStatusCarrying {
    public var exitStatus: ExitStatus { .configuration }
}

/// The grants table stayed locked by others through every retry (a migration's or prune's short lock):
/// nothing is wrong, a later try will get it.
extension ShortLock.Busy: ExitStatusCarrying {
    public var exitStatus: ExitStatus { .temporaryFailure }
}

extension MigrationError: ExitStatusCarrying {
    public var exitStatus: ExitStatus { .configuration }
}

/// The database failed outside any operation that classified it. Unreachable, lost, overloaded or shutting
/// down, a timeout, a lock wait given up or a serialization failure is 69: a later try may succeed, and
/// schedulers retry it. A privilege the role lacks is 77: the operator's to grant, named in the message. A
/// statement the server refused for any other reason (a constraint, one of clawback's own CB errors) would
/// fail the same way again: 70, a bug or a deployment to look at, which schedulers do not retry.
extension DatabaseError: ExitStatusCarrying {
    public var exitStatus: ExitStatus {
        switch kind {
        case .unreachable, .interrupted: .unavailable
        case .permissionDenied: .permissionDenied
        case .refused: .software
        }
    }
}

extension ExitStatus {
    /// The status `error` ends the process with, and what is said: an error that carries its status (a
    /// transaction's body's, when its rollback failed too: a refused schema is still 78), or a database
    /// failure no operation classified on its way up (a command's read refused for a privilege); nil for
    /// anything else, which the command line calls an internal error.
    public static func carried(by error: any Error) -> (any ExitStatusCarrying)? {
        (DatabaseError.transactionBody(of: error) as? any ExitStatusCarrying) ?? DatabaseError(error)
    }
}
