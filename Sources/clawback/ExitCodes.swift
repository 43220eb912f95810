import ArgumentParser

/// The exit codes monitoring and schedulers read. sysexits(3) where one fits; documented in docs/operations.md, whose table a test holds to this list.
enum ExitCodes {
    /// Done, everything verified.
    static let success = ExitCode(0)
    /// Command-line usage error (swift-argument-parser uses it for validation failures too).
    static let usage = ExitCode(64)
    /// Input data is bad (an import file with bad lines).
    static let dataError = ExitCode(65)
    /// Nothing to work on: no run to report on.
    static let noInput = ExitCode(66)
    /// PostgreSQL or Apple could not be reached. Retry later.
    static let unavailable = ExitCode(69)
    /// An internal error: a bug, or a failure the program did not expect.
    static let software = ExitCode(70)
    /// A report file could not be written (the database work is committed).
    static let cannotCreateOutput = ExitCode(73)
    /// Finished with unverified grants or interrupted: rerun to finish.
    static let temporaryFailure = ExitCode(75)
    /// Configuration is wrong (including a schema migration that changed after it was applied).
    static let configuration = ExitCode(78)
    /// Another run holds the lock for the same scope.
    static let locked = ExitCode(85)
}
