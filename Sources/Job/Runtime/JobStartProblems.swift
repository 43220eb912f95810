/// Why a job cannot do what it was asked with this configuration (exit 78, not retried): the command asks
/// for what the configuration has not, in a sentence naming the flag or setting; or a setting that cannot
/// be used, with the error that said so kept as it was thrown (`ConfigurationErrors` naming the field, a
/// key file's `CredentialError`), for a caller or a test to read by its type rather than by its words.
public enum ConfigurationProblem: Error, Sendable, CustomStringConvertible {
    /// The command and the configuration disagree (`--bundle` of an app not configured).
    case asked(String)
    /// A setting cannot be used: its own error.
    case invalid(any Error)

    public var description: String {
        switch self {
        case .asked(let sentence): sentence
        case .invalid(let error): "\(error)"
        }
    }
}

/// Something a job needs could not be reached or started (exit 69: a scheduler retries): what it was doing,
/// and the error that stopped it, kept as it was thrown (a `DatabaseError`, an `HTTPClients.StartFailure`,
/// a store client's error).
public struct Unavailable: Error, Sendable, CustomStringConvertible {
    /// What could not be done ("cannot connect to PostgreSQL"); nil when the cause says it itself.
    public let doing: String?
    public let cause: any Error

    public init(_ doing: String? = nil, cause: any Error) {
        self.doing = doing
        self.cause = cause
    }

    public var description: String { doing.map { "\($0): \(cause)" } ?? "\(cause)" }
}
