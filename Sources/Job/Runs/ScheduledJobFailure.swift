public import Storage

/// What a scheduled job's outcome says of itself when the job could not finish its work: the command that
/// ran (for "another … is running") and what is left for its next run.
public protocol ScheduledJobOutcome: Sendable {
    static var command: String { get }
    var unfinishedDescription: String { get }
}

/// How a scheduled job other than a run (Apple's refund-request answers, Google's sweep and notifications)
/// fails: before it could start (configuration 78, the database 69 or 78), another one holding its lock (85),
/// or finished with work left for the next run (75, with the outcome to print).
public enum ScheduledJobFailure<Outcome: ScheduledJobOutcome>: ExitStatusCarrying, JobStartFailure {
    case configuration(ConfigurationProblem)
    case unavailable(Unavailable)
    /// The database is not migrated, or was migrated by a newer clawback.
    case schema(SchemaError)
    /// PostgreSQL refused or failed a statement (69 when a retry may help, 77 for a privilege the role lacks, else 70).
    case database(DatabaseError)
    case locked(LockHolder?)
    case unfinished(Outcome)

    public var exitStatus: ExitStatus {
        switch self {
        case .configuration: .configuration
        case .unavailable: .unavailable
        case .schema(let error): error.exitStatus
        case .database(let error): error.exitStatus
        case .locked: .locked
        case .unfinished: .temporaryFailure
        }
    }

    public var description: String {
        switch self {
        case .configuration(let problem): "\(problem)"
        case .unavailable(let reason): "\(reason)"
        case .schema(let error): "\(error)"
        case .database(let error): "PostgreSQL: \(error)"
        case .locked(let holder):
            "another `\(Outcome.command)` is running" + (holder.map { " (PostgreSQL pid \($0.pid), \($0.applicationName))" } ?? "")
        case .unfinished(let outcome): outcome.unfinishedDescription
        }
    }

    /// The outcome to print, when the job ran to its end with work left.
    public var outcome: Outcome? {
        if case .unfinished(let outcome) = self { return outcome }
        return nil
    }
}
