import Foundation

/// A child process started with posix_spawn, for every program clawback and its tests run (Chromium for the
/// PDF, psql for the benchmark, the built executables and the tools the tests drive).
///
/// Not Foundation's `Process`: on this toolchain `Process.run()` reads past a buffer while it lists
/// /proc/self/fd and now and then takes the whole process down with it (a SIGSEGV in memcpy;
/// swift-corelibs-foundation#5472), more often the more descriptors other threads open and close meanwhile.
///
/// The child gets descriptors 0, 1 and 2 and nothing else of this process, and every signal at its default:
/// another child's pipe end held by this one would keep a reader waiting for an end of file that never
/// comes, and a database socket is no business of Chromium's. The parent's pipe ends are close-on-exec too.
public struct SpawnedChild: Sendable {
    /// Where one of the child's output streams goes.
    public enum Output: Sendable {
        /// /dev/null.
        case discarded
        /// A pipe whose reading end the caller reads (to its end, before `wait()`, so the child never
        /// blocks on a full pipe).
        case captured
        /// A file the child writes from its start (made, or emptied, with mode 0600), appending: both streams
        /// may name the same file.
        case file(String)
    }

    /// How the child ended.
    public enum Termination: Sendable, Equatable {
        case exited(Int32)
        case signalled(Int32)

        /// The exit status, or the signal's number.
        public var code: Int32 {
            switch self {
            case .exited(let status), .signalled(let status): status
            }
        }
    }

    /// Why a child could not be started, naming the program.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String

        public init(description: String) { self.description = description }
    }

    public let pid: Int32
    /// The reading end of the child's standard output, when captured.
    public let standardOutput: Int32?
    /// The reading end of the child's standard error, when captured.
    public let standardError: Int32?
    /// The writing end of the child's standard input, when `input`: `write(_:)` writes and closes it, or the
    /// caller closes it itself (a server that stops at the end of its input).
    public let standardInput: Int32?

    /// Starts `command` (an absolute path, then its arguments) with exactly `environment` ("NAME=value"
    /// strings). Its standard input is a pipe `write(_:)` feeds when `input`, else /dev/null.
    public init(
        _ command: [String], environment: [String], input: Bool = false, standardOutput: Output = .discarded,
        standardError: Output = .discarded
    ) throws(Failure) {
        guard let program = command.first else { throw Failure(description: "no program to start") }
        var pipes: [Int32] = []
        func pipeEnds() throws(Failure) -> (read: Int32, write: Int32) {
            var ends: [Int32] = [-1, -1]
            guard pipe(&ends) == 0 else {
                let reason = String(cString: strerror(errno))
                for descriptor in pipes { close(descriptor) }
                throw Failure(description: "cannot make a pipe for \(program): \(reason)")
            }
            for descriptor in ends { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
            pipes += ends
            return (ends[0], ends[1])
        }
        let inputPipe = input ? try pipeEnds() : nil
        let outputPipe = standardOutput.isCaptured ? try pipeEnds() : nil
        let errorPipe = standardError.isCaptured ? try pipeEnds() : nil

        guard let closeFrom = addCloseFrom else {
            for descriptor in pipes { close(descriptor) }
            throw Failure(description: "cannot start \(program): this C library lacks posix_spawn_file_actions_addclosefrom_np (glibc 2.34)")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Every signal as a new program expects it: none blocked, none ignored. The parent's choices (clawback
        // ignores SIGTERM and SIGINT to stop at a batch boundary) are not the child's.
        var none = sigset_t()
        var all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        if let inputPipe {
            posix_spawn_file_actions_adddup2(&actions, inputPipe.read, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        for (descriptor, output, pipe) in [(Int32(1), standardOutput, outputPipe), (2, standardError, errorPipe)] {
            switch (output, pipe) {
            case (_, let pipe?): posix_spawn_file_actions_adddup2(&actions, pipe.write, descriptor)
            case (.file(let path), nil): posix_spawn_file_actions_addopen(&actions, descriptor, path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o600)
            default: posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", O_WRONLY, 0)
            }
        }
        // Nothing but 0, 1 and 2: not every descriptor of this process is close-on-exec (libcurl's sockets,
        // other libraries' files), and a child must hold neither a database socket nor another child's pipe.
        _ = closeFrom(&actions, 3)
        let argv = command.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        // The child's ends are the child's now (or nobody's, if it did not start).
        for end in [inputPipe?.read, outputPipe?.write, errorPipe?.write] { if let end { close(end) } }
        guard spawned == 0 else {
            for end in [inputPipe?.write, outputPipe?.read, errorPipe?.read] { if let end { close(end) } }
            throw Failure(description: "cannot start \(program): \(String(cString: strerror(spawned)))")
        }
        self.pid = pid
        self.standardOutput = outputPipe?.read
        self.standardError = errorPipe?.read
        self.standardInput = inputPipe?.write
    }

    /// Writes `bytes` to the child's standard input, then closes it (nothing when it was not a pipe).
    public func write(_ bytes: [UInt8]) {
        guard let standardInput else { return }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { writeDescriptor(standardInput, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { break }  // the child closed its end: what it did not read is its choice
            offset += written
        }
        close(standardInput)
    }

    /// Reads `descriptor` (one of this child's captured streams) to its end and closes it.
    public static func readToEnd(_ descriptor: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        close(descriptor)
        return bytes
    }

    /// What the child wrote to its captured streams, each read to its end (standard error on a thread of its
    /// own, so that neither pipe fills while the other is read), and how it ended.
    public func finish() -> (output: [UInt8], error: [UInt8], termination: Termination) {
        let errors = standardError.map(PipeReader.init)
        let output = standardOutput.map(Self.readToEnd) ?? []
        return (output, errors?.bytes() ?? [], wait())
    }

    /// Waits for the child to end (and reaps it).
    public func wait() -> Termination {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return Self.termination(status)
    }

    /// The child's end if it has ended (reaped then), without waiting.
    public func poll() -> Termination? {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == pid ? Self.termination(status) : nil
    }

    /// WIFEXITED and WTERMSIG are macros Swift does not see: the low 7 bits are the signal, 0 for an exit.
    private static func termination(_ status: Int32) -> Termination {
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    }
}

extension SpawnedChild.Output {
    fileprivate var isCaptured: Bool {
        if case .captured = self { return true }
        return false
    }
}

/// glibc's posix_spawn_file_actions_addclosefrom_np (2.34 and later), looked up at run time: its declaration
/// needs _GNU_SOURCE, which the Glibc module Swift imports is not built with.
private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
private let addCloseFrom: AddCloseFrom? = {
    guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
    return unsafeBitCast(symbol, to: AddCloseFrom.self)
}()

/// `write(2)`, out of reach of `SpawnedChild.write(_:)`'s name.
private func writeDescriptor(_ descriptor: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    write(descriptor, buffer, count)
}

/// Reads a pipe to its end on a thread of its own.
private final class PipeReader: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    // Written by the reading thread before it signals `done`, read only after waiting on it.
    private var read: [UInt8] = []

    init(_ descriptor: Int32) {
        Thread {
            self.read = SpawnedChild.readToEnd(descriptor)
            self.done.signal()
        }.start()
    }

    func bytes() -> [UInt8] {
        done.wait()
        return read
    }
}
