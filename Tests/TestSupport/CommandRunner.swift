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
        let child = try SpawnedChild(
            ChildProcess.command(executable, arguments, in: directory), environment: Self.environment(environment, removing: removing),
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
    /// The test process's environment with `overrides` over it and `removing` taken out, as a child gets it.
    static func environment(_ overrides: [String: String], removing: [String] = []) -> [String] {
        var merged = ProcessInfo.processInfo.environment.merging(overrides) { $1 }
        for name in removing { merged[name] = nil }
        return merged.map { "\($0.key)=\($0.value)" }
    }

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

/// A built executable of this package the test kills (SIGKILL at a chosen moment) or watches while it runs,
/// started with posix_spawn (`SpawnedChild` says why), with Foundation `Process`'s names for what the crash
/// tests ask of it. Its output goes to /dev/null, and so does its standard error unless captured, when
/// `standardErrorToEnd()` reads it.
public final class ChildProcess {
    public enum TerminationReason: Sendable { case exit, uncaughtSignal }

    private let child: SpawnedChild

    private init(_ child: SpawnedChild) { self.child = child }

    /// Starts `product` (e.g. "clawback") with `arguments`, in the test process's environment with
    /// `environment` over it and `removing` taken out, from `directory` if given.
    public static func start(
        _ product: String, _ arguments: [String], environment: [String: String] = [:], removing: [String] = [], directory: URL? = nil,
        capturingStandardError: Bool = false
    ) throws -> ChildProcess {
        ChildProcess(
            try SpawnedChild(
                command(CommandRunner.productsDirectory.appendingPathComponent(product), arguments, in: directory),
                environment: CommandRunner.environment(environment, removing: removing),
                standardError: capturingStandardError ? .captured : .discarded))
    }

    /// `executable` with `arguments`, run from `directory` when given: posix_spawn has no portable chdir
    /// action, so a shell changes directory and then becomes the command.
    static func command(_ executable: URL, _ arguments: [String], in directory: URL?) -> [String] {
        let command = [executable.path] + arguments
        guard let directory else { return command }
        return ["/bin/sh", "-c", #"cd "$0" && exec "$@""#, directory.path] + command
    }

    /// What the child wrote to its standard error, read until it closes it; empty unless captured.
    public func standardErrorToEnd() -> String { String(decoding: child.readErrorToEnd(), as: UTF8.self) }

    public var processIdentifier: Int32 { child.pid }

    public var isRunning: Bool { child.poll() == nil }

    public func waitUntilExit() { _ = child.wait() }

    /// Waits for the child, then for its sessions on `database` to end: a killed run's last COMMIT, and its
    /// lock's session, can outlive it on the server for a moment, and what the test reads or reruns next
    /// must be what the run left.
    public func waitUntilExit(thenForSessionsOn database: String) async throws {
        waitUntilExit()
        try await TestPostgres.waitForOtherSessionsToEnd(database: database)
    }

    /// The exit status, or the signal's number; 0 while it runs.
    public var terminationStatus: Int32 { child.poll()?.code ?? 0 }
    public var terminationReason: TerminationReason {
        if case .signalled = child.poll() { return .uncaughtSignal }
        return .exit
    }
}
