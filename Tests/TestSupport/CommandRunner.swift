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
    public static func run(
        executable: URL, _ arguments: [String], environment: [String: String] = [:], removing: [String] = [],
        input: String? = nil, directory: URL? = nil
    ) throws -> CommandResult {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        var merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        for name in removing { merged[name] = nil }
        process.environment = merged
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        let standardInput = Pipe()
        process.standardInput = input == nil ? FileHandle.nullDevice : standardInput
        try process.run()
        if let input {
            standardInput.fileHandleForWriting.write(Data(input.utf8))
            try standardInput.fileHandleForWriting.close()
        }
        // Read both pipes to the end before waiting, so a chatty child never blocks on a full pipe.
        let errorData = ErrorCollector(error.fileHandleForReading)
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CommandResult(
            status: process.terminationStatus, killedBySignal: process.terminationReason == .uncaughtSignal,
            standardOutput: String(decoding: outputData, as: UTF8.self), standardError: String(decoding: errorData.wait(), as: UTF8.self))
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
