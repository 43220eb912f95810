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
///
/// A class, so that one owner holds the pipe ends and the child's end: each end is closed once, the child
/// is reaped once, and a child dropped before its end is killed and reaped (no zombie, no stray run).
public final class SpawnedChild {
    /// Where one of the child's output streams goes.
    public enum Output: Sendable {
        /// /dev/null.
        case discarded
        /// A pipe this process reads (`finish()`, or `readOutputToEnd()` / `readErrorToEnd()`).
        case captured
        /// A file the child writes from its start, appending (both streams may name the same file): made with
        /// mode 0600 (less the umask) if it is not there, emptied if it is.
        case file(String)
    }

    /// How the child ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        /// The exit status, or the signal's number.
        public var code: Int32 {
            switch self {
            case .exited(let status), .signalled(let status): status
            }
        }

        public var description: String {
            switch self {
            case .exited(let status): "exit \(status)"
            case .signalled(let signal): "signal \(signal)"
            }
        }
    }

    /// Why a child could not be started, naming the program.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String

        public init(description: String) { self.description = description }
    }

    public let pid: Int32
    private var output: Int32?
    private var error: Int32?
    private var input: Int32?
    private var ended: Termination?

    /// Starts `command` (an absolute path, then its arguments) with exactly `environment` ("NAME=value"
    /// strings). Its standard input is a pipe (`finish(input:)` or `closeInput()`) when `input`, else /dev/null.
    public init(
        _ command: [String], environment: [String], input: Bool = false, standardOutput: Output = .discarded,
        standardError: Output = .discarded
    ) throws(Failure) {
        guard let program = command.first else { throw Failure(description: "no program to start") }
        var pipes: [Int32] = []
        func fail(_ reason: String) -> Failure {
            for descriptor in pipes { close(descriptor) }
            return Failure(description: "cannot start \(program): \(reason)")
        }
        func pipeEnds() throws(Failure) -> (read: Int32, write: Int32) {
            var ends: [Int32] = [-1, -1]
            guard pipe(&ends) == 0 else { throw fail("no pipe: \(String(cString: strerror(errno)))") }
            for descriptor in ends { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
            pipes += ends
            return (ends[0], ends[1])
        }
        guard let closeFrom = addCloseFrom else { throw fail("this C library lacks posix_spawn_file_actions_addclosefrom_np (glibc 2.34)") }
        let inputPipe = input ? try pipeEnds() : nil
        let outputPipe = standardOutput.isCaptured ? try pipeEnds() : nil
        let errorPipe = standardError.isCaptured ? try pipeEnds() : nil

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var added = true
        if let inputPipe {
            added = added && posix_spawn_file_actions_adddup2(&actions, inputPipe.read, 0) == 0
        } else {
            added = added && posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0) == 0
        }
        for (descriptor, output, pipe) in [(Int32(1), standardOutput, outputPipe), (2, standardError, errorPipe)] {
            switch (output, pipe) {
            case (_, let pipe?): added = added && posix_spawn_file_actions_adddup2(&actions, pipe.write, descriptor) == 0
            case (.file(let path), nil):
                added = added && posix_spawn_file_actions_addopen(&actions, descriptor, path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o600) == 0
            default: added = added && posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", O_WRONLY, 0) == 0
            }
        }
        // Nothing but 0, 1 and 2: not every descriptor of this process is close-on-exec (libcurl's sockets,
        // other libraries' files), and a child must hold neither a database socket nor another child's pipe.
        added = added && closeFrom(&actions, 3) == 0
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Every signal as a new program expects it: none blocked, none ignored. The parent's choices (clawback
        // ignores SIGTERM and SIGINT to stop at a batch boundary) are not the child's.
        var none = sigset_t()
        var all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        added = added && posix_spawnattr_setsigmask(&attributes, &none) == 0 && posix_spawnattr_setsigdefault(&attributes, &all) == 0
        added = added && posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)) == 0
        guard added else { throw fail("cannot describe its descriptors and signals to posix_spawn (out of memory?)") }

        let argv = command.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        guard spawned == 0 else {
            let files = [standardOutput, standardError].compactMap(\.path)
            throw fail(String(cString: strerror(spawned)) + (files.isEmpty ? "" : " (or cannot open \(files.joined(separator: " and ")))"))
        }
        // The child's ends are the child's now.
        for end in [inputPipe?.read, outputPipe?.write, errorPipe?.write] { if let end { close(end) } }
        self.pid = pid
        self.output = outputPipe?.read
        self.error = errorPipe?.read
        self.input = inputPipe?.write
    }

    /// A child dropped before its end (a test that threw, say) is killed and reaped; its pipes are closed.
    deinit {
        for descriptor in [input, output, error] { if let descriptor { close(descriptor) } }
        if ended == nil && poll() == nil {
            kill(pid, SIGKILL)
            _ = wait()
        }
    }

    /// Closes the child's standard input (a server that stops at the end of its input stops).
    public func closeInput() {
        if let input { close(input) }
        input = nil
    }

    /// The child's standard output up to its first newline (without it); the rest is not read, and the pipe
    /// is closed: for a server that says once where it listens.
    public func firstOutputLine() -> [UInt8] {
        guard let output else { return [] }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = read(output, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            guard count == 1, byte != UInt8(ascii: "\n") else { break }
            line.append(byte)
        }
        close(output)
        self.output = nil
        return line
    }

    /// The child's standard output, read to its end (empty unless captured, or read already).
    public func readOutputToEnd() -> [UInt8] {
        defer { output = nil }
        return output.map(Self.readToEnd) ?? []
    }

    /// The child's standard error, read to its end (empty unless captured, or read already).
    public func readErrorToEnd() -> [UInt8] {
        defer { error = nil }
        return error.map(Self.readToEnd) ?? []
    }

    /// Feeds `input` to the child's standard input and closes it, reads its captured streams to their ends,
    /// and waits for it. Writing and reading go on at once (standard error and the input on threads of their
    /// own), so that no pipe fills while another is served, however much each side writes.
    public func finish(input bytes: [UInt8] = []) -> (output: [UInt8], error: [UInt8], termination: Termination) {
        let writer = input.map { descriptor in Background { Self.write(bytes, to: descriptor) } }
        input = nil
        let errors = error.map { descriptor in Background { Self.readToEnd(descriptor) } }
        error = nil
        let output = readOutputToEnd()
        _ = writer?.result()
        return (output, errors?.result() ?? [], wait())
    }

    /// Waits for the child to end (and reaps it, once; later calls give the same end).
    public func wait() -> Termination {
        if let ended { return ended }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            // Only this object reaps its child: anything but an interruption is a bug, not an end to invent.
            guard errno == EINTR else { preconditionFailure("waitpid(\(pid)) failed: \(String(cString: strerror(errno)))") }
        }
        let termination = Self.termination(status)
        ended = termination
        return termination
    }

    /// The child's end if it has ended (reaped then), without waiting.
    public func poll() -> Termination? {
        if let ended { return ended }
        var status: Int32 = 0
        let reaped = waitpid(pid, &status, WNOHANG)
        guard reaped == pid else {
            precondition(reaped == 0 || errno == EINTR, "waitpid(\(pid)) failed: \(String(cString: strerror(errno)))")
            return nil
        }
        ended = Self.termination(status)
        return ended
    }

    /// WIFEXITED and WTERMSIG are macros Swift does not see: the low 7 bits are the signal, 0 for an exit.
    private static func termination(_ status: Int32) -> Termination {
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    }

    /// Reads `descriptor` to its end and closes it.
    private static func readToEnd(_ descriptor: Int32) -> [UInt8] {
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

    /// Writes `bytes` to `descriptor` and closes it. SIGPIPE is blocked on this thread, so that a child that
    /// exits without reading its input ends this write with EPIPE, not this process with a signal (the
    /// signal, left pending on this thread, goes with it).
    private static func write(_ bytes: [UInt8], to descriptor: Int32) {
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { writeDescriptor(descriptor, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { break }  // the child closed its end: what it did not read is its choice
            offset += written
        }
        close(descriptor)
    }
}

extension SpawnedChild.Output {
    fileprivate var isCaptured: Bool {
        if case .captured = self { return true }
        return false
    }

    fileprivate var path: String? {
        if case .file(let path) = self { return path }
        return nil
    }
}

/// glibc's posix_spawn_file_actions_addclosefrom_np (2.34 and later), looked up at run time: its declaration
/// needs _GNU_SOURCE, which the Glibc module Swift imports is not built with.
private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
private let addCloseFrom: AddCloseFrom? = {
    guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
    return unsafeBitCast(symbol, to: AddCloseFrom.self)
}()

/// `write(2)`, out of reach of `SpawnedChild.write(_:to:)`'s name.
private func writeDescriptor(_ descriptor: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    write(descriptor, buffer, count)
}

/// Work on a thread of its own, and its result once it is done.
private final class Background<Value>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    // Written by the thread before it signals `done`, read only after waiting on it.
    private var value: Value?

    init(_ work: @escaping @Sendable () -> Value) {
        Thread {
            self.value = work()
            self.done.signal()
        }.start()
    }

    func result() -> Value {
        done.wait()
        // swift-format-ignore: NeverForceUnwrap
        return value!  // set before the signal
    }
}
