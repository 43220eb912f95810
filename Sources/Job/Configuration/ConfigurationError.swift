/// A configuration problem, naming the field and what is wrong with it. The CLI exits 78 on it.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The field's path in the file, e.g. `apps[0].key_file`, or the environment variable or flag.
    public let field: String
    public let problem: String

    public init(field: String, problem: String) {
        self.field = field
        self.problem = problem
    }

    public var description: String { "\(field): \(problem)" }
}

/// Several problems at once, so that `config check` and a failing start list everything to fix.
public struct ConfigurationErrors: Error, Sendable, CustomStringConvertible {
    public let errors: [ConfigurationError]

    package init(errors: [ConfigurationError]) { self.errors = errors }

    public var description: String {
        "configuration has \(errors.count) problem\(errors.count == 1 ? "" : "s"):\n"
            + errors.map { "  - \($0)" }.joined(separator: "\n")
    }
}
