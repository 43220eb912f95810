public import Foundation

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

    /// Runs any `executable` (a script of the repository's, say) the same way, from `directory` if given.
    ///
    /// Started with posix_spawn, not Foundation's `Process`: on this toolchain `Process.run()` reads past a
    /// buffer while it lists /proc/self/fd and now and then takes the whole test process down with it (a
    /// SIGSEGV in memcpy; swift-corelibs-foundation#5472), and the suite starts thousands of children.
    public static func run(
        executable: URL, _ arguments: [String], environment: [String: String] = [:], removing: [String] = [],
        input: String? = nil, directory: URL? = nil
    ) throws -> CommandResult {
        var merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        for name in removing { merged[name] = nil }
        var command = [executable.path] + arguments
        // posix_spawn's chdir action is not visible to Swift: a shell changes directory, then becomes the command.
        if let directory { command = ["/bin/sh", "-c", #"cd "$0" && exec "$@""#, directory.path] + command }
        let child = try SpawnedChild(command, environment: merged.map { "\($0.key)=\($0.value)" }, input: input != nil, output: true)
        if let input { child.write(input) }
        // Read both pipes to the end before waiting, so a chatty child never blocks on a full pipe.
        let errorData = ErrorCollector(FileHandle(fileDescriptor: child.standardError, closeOnDealloc: true))
        let outputData = FileHandle(fileDescriptor: child.standardOutput, closeOnDealloc: true).readDataToEndOfFile()
        let (status, signalled) = child.wait()
        return CommandResult(
            status: status, killedBySignal: signalled, standardOutput: String(decoding: outputData, as: UTF8.self),
            standardError: String(decoding: errorData.wait(), as: UTF8.self))
    }
}

/// A child started with posix_spawn: its standard output and error are pipes read by the caller (or
/// /dev/null), its standard input a pipe (when there is input) or /dev/null. The parent's ends are
/// close-on-exec, so that another test's child does not inherit them and hold a reader waiting.
private struct SpawnedChild {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let pid: pid_t
    let standardOutput: Int32
    let standardError: Int32
    private let standardInput: Int32?

    init(_ command: [String], environment: [String], input: Bool, output captured: Bool) throws {
        var output: [Int32] = [-1, -1]
        var error: [Int32] = [-1, -1]
        var inputPipe: [Int32] = [-1, -1]
        guard !captured || (pipe(&output) == 0 && pipe(&error) == 0), !input || pipe(&inputPipe) == 0 else {
            throw Failure(description: "pipe failed: \(String(cString: strerror(errno)))")
        }
        for descriptor in output + error + inputPipe where descriptor >= 0 { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if input {
            posix_spawn_file_actions_adddup2(&actions, inputPipe[0], 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        if captured {
            posix_spawn_file_actions_adddup2(&actions, output[1], 1)
            posix_spawn_file_actions_adddup2(&actions, error[1], 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        let argv = command.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, command[0], &actions, nil, argv, envp)
        if captured {
            close(output[1])
            close(error[1])
        }
        if input { close(inputPipe[0]) }
        guard spawned == 0 else {
            for descriptor in [output[0], error[0], inputPipe[1]] where descriptor >= 0 { close(descriptor) }
            throw Failure(description: "cannot start \(command[0]): \(String(cString: strerror(spawned)))")
        }
        self.pid = pid
        standardOutput = output[0]
        standardError = error[0]
        standardInput = input ? inputPipe[1] : nil
    }

    /// Writes `text` to the child's standard input, then closes it.
    func write(_ text: String) {
        guard let standardInput else { return }
        let handle = FileHandle(fileDescriptor: standardInput, closeOnDealloc: true)
        handle.write(Data(text.utf8))
        try? handle.close()
    }

    /// Waits for the child: its exit status, or the signal that ended it (and true).
    func wait() -> (status: Int32, signalled: Bool) {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return Self.decode(status)
    }

    /// The child's end, if it has ended (reaped then), without waiting.
    func poll() -> (status: Int32, signalled: Bool)? {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == pid ? Self.decode(status) : nil
    }

    /// WIFEXITED and WTERMSIG are macros Swift does not see: the low 7 bits are the signal, 0 for an exit.
    private static func decode(_ status: Int32) -> (status: Int32, signalled: Bool) {
        let signal = status & 0x7f
        return signal == 0 ? ((status >> 8) & 0xff, false) : (signal, true)
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
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result {
                        try run(product, arguments, environment: environment, removing: removing, input: input) as CommandResult
                    })
            }.start()
        }
    }
}

/// Reads a pipe to its end on a background thread.
private final class ErrorCollector: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var data = Data()

    init(_ handle: FileHandle) {
        Thread {
            self.data = handle.readDataToEndOfFile()
            self.done.signal()
        }.start()
    }

    func wait() -> Data {
        done.wait()
        return data
    }
}

/// A child the test kills (SIGKILL at a chosen moment), started with posix_spawn for the reason `CommandRunner`
/// is, with Foundation `Process`'s names for what the crash tests use; its output goes to /dev/null.
public final class ChildProcess {
    public enum TerminationReason: Sendable { case exit, uncaughtSignal }

    public var executableURL: URL?
    public var arguments: [String] = []
    public var environment: [String: String]?
    public var currentDirectoryURL: URL?
    private var child: SpawnedChild?
    private var ended: (status: Int32, signalled: Bool)?

    public init() {}

    public func run() throws {
        guard let executableURL else { throw SpawnedChild.Failure(description: "no executable") }
        var command = [executableURL.path] + arguments
        if let directory = currentDirectoryURL { command = ["/bin/sh", "-c", #"cd "$0" && exec "$@""#, directory.path] + command }
        let environment = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        child = try SpawnedChild(command, environment: environment, input: false, output: false)
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

    public var terminationStatus: Int32 { ended?.status ?? 0 }
    public var terminationReason: TerminationReason { ended?.signalled == true ? .uncaughtSignal : .exit }
}
