public import Foundation
import Spawning

/// Runs a built executable of this package and captures what it printed.
public struct CommandResult: Sendable {
    /// The exit status, or the signal number when `killedBySignal`.
    public let status: Int32
    public var killedBySignal = false
    public let standardOutput: String
    public let standardError: String
}

public enum CommandRunner {
    /// The directory holding this build's products (the test bundle sits beside the executables).
    public static var productsDirectory: URL {
        if let override = ProcessInfo.processInfo.environment["CLAWBACK_PRODUCTS_DIR"] {
            return URL(fileURLWithPath: override)
        }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    /// Runs `product` (e.g. "clawback") with `arguments`, in an environment where `environment` overrides
    /// and `removing` deletes variables, and waits for it.
    public static func run(
        _ product: String, _ arguments: [String], environment: [String: String] = [:], removing: [String] = [],
        input: String? = nil
    ) throws -> CommandResult {
        try run(
            executable: productsDirectory.appendingPathComponent(product), arguments, environment: environment, removing: removing,
            input: input)
    }

    /// Runs any `executable` (a script of the repository's, say) the same way, from `directory` if given; with
    /// `discardingOutput`, its output and errors go to /dev/null (a program whose helpers may outlive it and
    /// would hold a pipe open).
    /// Started with posix_spawn (`SpawnedChild` says why not Foundation's `Process`).
    public static func run(
        executable: URL, _ arguments: [String], environment: [String: String] = [:], removing: [String] = [],
        input: String? = nil, directory: URL? = nil, discardingOutput: Bool = false
    ) throws -> CommandResult {
        var merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        for name in removing { merged[name] = nil }
        let child = try SpawnedChild(
            ChildProcess.command(executable, arguments, in: directory), environment: merged.map { "\($0.key)=\($0.value)" },
            input: input != nil, standardOutput: discardingOutput ? .discarded : .captured,
            standardError: discardingOutput ? .discarded : .captured)
        let (output, errors, termination) = child.finish(input: Array((input ?? "").utf8))
        var signalled = false
        if case .signalled = termination { signalled = true }
        return CommandResult(
            status: termination.code, killedBySignal: signalled, standardOutput: String(decoding: output, as: UTF8.self),
            standardError: String(decoding: errors, as: UTF8.self))
    }
}

extension CommandRunner {
    /// `run` for async tests: the child is waited for on a thread of its own, never on one of Swift's few
    /// cooperative threads, which other tests' tasks (rate limiter wake-ups, simulator clients) need to
    /// stay on time.
    public static func run(
        _ product: String, _ arguments: [String], environment: [String: String] = [:], removing: [String] = [],
        input: String? = nil
    ) async throws -> CommandResult {
        try await run(
            executable: productsDirectory.appendingPathComponent(product), arguments, environment: environment, removing: removing,
            input: input)
    }

    /// `run(executable:)` for async tests, waited for on a thread of its own as `run(_:_:)` is.
    public static func run(
        executable: URL, _ arguments: [String], environment: [String: String] = [:], removing: [String] = [],
        input: String? = nil, directory: URL? = nil, discardingOutput: Bool = false
    ) async throws -> CommandResult {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result {
                        try run(
                            executable: executable, arguments, environment: environment, removing: removing, input: input,
                            directory: directory, discardingOutput: discardingOutput) as CommandResult
                    })
            }.start()
        }
    }
}

/// A child the test kills (SIGKILL at a chosen moment), started with posix_spawn (`SpawnedChild` says why),
/// with Foundation `Process`'s names for what the crash tests use. Its output goes to /dev/null, and so does
/// its standard error unless `capturesStandardError`, when `standardErrorToEnd()` reads it.
public final class ChildProcess {
    public enum TerminationReason: Sendable { case exit, uncaughtSignal }

    public var executableURL: URL?
    public var arguments: [String] = []
    public var environment: [String: String]?
    public var currentDirectoryURL: URL?
    public var capturesStandardError = false
    private var child: SpawnedChild?
    private var ended: SpawnedChild.Termination?

    public init() {}

    /// `executable` with `arguments`, run from `directory` when given: posix_spawn has no portable chdir
    /// action, so a shell changes directory and then becomes the command.
    static func command(_ executable: URL, _ arguments: [String], in directory: URL?) -> [String] {
        let command = [executable.path] + arguments
        guard let directory else { return command }
        return ["/bin/sh", "-c", #"cd "$0" && exec "$@""#, directory.path] + command
    }

    public func run() throws {
        guard let executableURL else { throw SpawnedChild.Failure(description: "no executable") }
        child = try SpawnedChild(
            Self.command(executableURL, arguments, in: currentDirectoryURL),
            environment: (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" },
            standardError: capturesStandardError ? .captured : .discarded)
    }

    /// What the child wrote to its standard error, read until it closes it; empty unless `capturesStandardError`.
    public func standardErrorToEnd() -> String {
        String(decoding: child?.readErrorToEnd() ?? [], as: UTF8.self)
    }

    public var processIdentifier: Int32 { child?.pid ?? 0 }

    public var isRunning: Bool {
        guard let child, ended == nil else { return false }
        ended = child.poll()
        return ended == nil
    }

    public func waitUntilExit() {
        guard let child, ended == nil else { return }
        ended = child.wait()
    }

    public var terminationStatus: Int32 { ended?.code ?? 0 }
    public var terminationReason: TerminationReason {
        if case .signalled = ended { return .uncaughtSignal }
        return .exit
    }
}
