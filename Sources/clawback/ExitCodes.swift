import ArgumentParser
import Job

/// The exit codes monitoring and schedulers read, as ArgumentParser's `ExitCode`s: `ExitStatus` (in Job)
/// is the list, documented in docs/operations.md, whose table a test holds to it.
enum ExitCodes {
    static let success = code(.success)
    static let usage = code(.usage)
    static let dataError = code(.dataError)
    static let noInput = code(.noInput)
    static let unavailable = code(.unavailable)
    static let software = code(.software)
    static let cannotCreateOutput = code(.cannotCreateOutput)
    static let temporaryFailure = code(.temporaryFailure)
    static let configuration = code(.configuration)
    static let locked = code(.locked)

    static func code(_ status: ExitStatus) -> ExitCode { ExitCode(status.rawValue) }
}
