import Foundation
import Spawning
import Testing

/// `SpawnedChild` against real programs of the base system: how a child ended, what it wrote, what it read,
/// and which descriptors it was given.
@Suite("Child processes started with posix_spawn")
struct SpawnedChildTests {
    static let environment = ["PATH=/usr/bin:/bin", "LC_ALL=C"]

    static func shell(_ script: String, input: Bool = false, output: SpawnedChild.Output = .captured, error: SpawnedChild.Output = .captured)
        throws -> SpawnedChild
    {
        try SpawnedChild(["/bin/sh", "-c", script], environment: environment, input: input, standardOutput: output, standardError: error)
    }

    @Test("an exit status and a signal are told apart, each with its number")
    func termination() throws {
        #expect(try Self.shell("exit 3").finish().termination == .exited(3))
        #expect(try Self.shell("exit 0").finish().termination == .exited(0))
        #expect(try Self.shell("kill -KILL $$").finish().termination == .signalled(9))
        #expect(try Self.shell("kill -TERM $$").finish().termination == .signalled(15))
    }

    @Test("the child starts with every signal at its default and none blocked, whatever this process ignores")
    func signalsAtDefault() throws {
        // As clawback ignores SIGTERM to stop at a batch boundary: SIGUSR2 ignored, and SIGUSR1 blocked on this
        // thread (posix_spawn starts the child with the calling thread's mask); nothing else here uses either.
        let previous = signal(SIGUSR2, SIG_IGN)
        defer { signal(SIGUSR2, previous) }
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGUSR1)
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        defer { pthread_sigmask(SIG_UNBLOCK, &blocked, nil) }
        let (output, _, termination) = try SpawnedChild(["/bin/cat", "/proc/self/status"], environment: Self.environment, standardOutput: .captured)
            .finish()
        #expect(termination == .exited(0))
        // The masks in hex, bit n-1 for signal n: signals 1 to 31 are the classic ones (glibc keeps 32 and 33,
        // real-time signals of its own, to itself).
        var fields: [String: String] = [:]
        for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: "\t")
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        let classic = { (field: String) in fields[field].flatMap { UInt64($0, radix: 16) }.map { $0 & 0x7fff_ffff } }
        #expect(classic("SigBlk:") == 0, "\(fields["SigBlk:"] ?? "none")")
        #expect(classic("SigIgn:") == 0, "\(fields["SigIgn:"] ?? "none")")
    }

    @Test("both streams captured whole, each far past a pipe's buffer, without the child stalling on either", .timeLimit(.minutes(1)))
    func bothStreamsWhole() throws {
        // 1 MiB on each stream, interleaved: a reader that drained one and then the other would deadlock.
        let script = "i=0; while [ $i -lt 16 ]; do head -c 65536 /dev/zero | tr '\\0' o; head -c 65536 /dev/zero | tr '\\0' e >&2; i=$((i+1)); done"
        let (output, error, termination) = try Self.shell(script).finish()
        #expect(termination == .exited(0))
        #expect(output.count == 1 << 20 && output.allSatisfy { $0 == UInt8(ascii: "o") })
        #expect(error.count == 1 << 20 && error.allSatisfy { $0 == UInt8(ascii: "e") })
    }

    @Test(
        "input reaches the child whole while its output is read, and is closed after it; without input the child reads an immediate end",
        .timeLimit(.minutes(1)))
    func input() throws {
        // 1 MiB through cat, which writes as it reads: written before anything read its output, both would stall.
        let text = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 % 251) }
        let child = try SpawnedChild(["/bin/cat"], environment: Self.environment, input: true, standardOutput: .captured)
        let echoed = child.finish(input: text)
        #expect(echoed.output == text && echoed.termination == .exited(0))
        let alone = try SpawnedChild(["/bin/cat"], environment: Self.environment, standardOutput: .captured).finish()
        #expect(alone.output.isEmpty && alone.termination == .exited(0))
    }

    @Test("both streams may go to one file, made 0600: neither overwrites the other, and a file there is emptied first")
    func oneFileForBoth() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spawned-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let first = try Self.shell("echo a long first line that the second run must not leave behind", output: .file(path), error: .file(path))
        let finished = first.finish()
        #expect(finished.output.isEmpty && finished.error.isEmpty && finished.termination == .exited(0))
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
        #expect(try Self.shell("echo out; echo err >&2; echo out2", output: .file(path), error: .file(path)).wait() == .exited(0))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "out\nerr\nout2\n")
    }

    @Test("the environment is exactly the one given; discarded streams are /dev/null")
    func environmentAndNull() throws {
        // The shell adds its own (PWD, say); nothing of the test process's environment may come through.
        let (output, _, _) = try Self.shell("env | grep -Ev '^(PWD|SHLVL|_)=' | sort; readlink /proc/self/fd/0").finish()
        #expect(String(decoding: output, as: UTF8.self) == "LC_ALL=C\nPATH=/usr/bin:/bin\n/dev/null\n")
        // find, asked about its own descriptor, writes the answer to the stream that is captured.
        let discardedOutput = try SpawnedChild(
            ["/usr/bin/find", "/proc/self/fd/1", "-maxdepth", "0", "-fprintf", "/dev/stderr", "%l"], environment: Self.environment,
            standardOutput: .discarded, standardError: .captured
        ).finish()
        #expect(discardedOutput.output.isEmpty && String(decoding: discardedOutput.error, as: UTF8.self) == "/dev/null")
        let discardedError = try SpawnedChild(
            ["/usr/bin/find", "/proc/self/fd/2", "-maxdepth", "0", "-printf", "%l"], environment: Self.environment, standardOutput: .captured,
            standardError: .discarded
        ).finish()
        #expect(discardedError.error.isEmpty && String(decoding: discardedError.output, as: UTF8.self) == "/dev/null")
    }

    @Test("a child holds nothing of this process but 0, 1 and 2: not another child's pipe, not a descriptor left inheritable")
    func nothingInherited() throws {
        // A descriptor without close-on-exec, as libraries leave some, and a child waiting on its input.
        let inheritable = open("/dev/null", O_RDONLY)
        #expect(inheritable > 2)
        defer { close(inheritable) }
        let waiting = try SpawnedChild(["/bin/cat"], environment: Self.environment, input: true, standardOutput: .captured)
        let (listing, _, _) = try SpawnedChild(["/bin/ls", "/proc/self/fd"], environment: Self.environment, standardOutput: .captured).finish()
        waiting.closeInput()
        #expect(waiting.finish().termination == .exited(0))
        let descriptors = String(decoding: listing, as: UTF8.self).split(separator: "\n").compactMap { Int($0) }
        // 0, 1 and 2, and the one ls opened to list the directory (3 again, as the inheritable one is not there).
        #expect(descriptors.filter { $0 > 2 }.count == 1, "\(descriptors)")
    }

    @Test("a program that is not there is refused by name; so is no program at all")
    func missingProgram() {
        #expect(throws: SpawnedChild.Failure.self) { try SpawnedChild(["/nonexistent/tool"], environment: Self.environment) }
        do {
            _ = try SpawnedChild(["/nonexistent/tool", "x"], environment: Self.environment, standardOutput: .captured)
            Issue.record("started a program that does not exist")
        } catch {
            #expect(error.description.contains("/nonexistent/tool"))
        }
        #expect(throws: SpawnedChild.Failure.self) { try SpawnedChild([], environment: Self.environment) }
    }

    @Test("poll is nil while the child runs, its end once it has ended")
    func poll() throws {
        let child = try SpawnedChild(["/bin/cat"], environment: Self.environment, input: true)
        #expect(child.poll() == nil)
        child.closeInput()
        var ended: SpawnedChild.Termination?
        for _ in 0..<500 where ended == nil {
            ended = child.poll()
            if ended == nil { usleep(10_000) }
        }
        #expect(ended == .exited(0))
    }

    @Test("a child that ends without reading its input ends the write, not this process (SIGPIPE)", .timeLimit(.minutes(1)))
    func unreadInput() throws {
        let child = try SpawnedChild(["/bin/true"], environment: Self.environment, input: true)
        #expect(child.finish(input: [UInt8](repeating: 1, count: 1 << 20)).termination == .exited(0))
    }

    @Test("a child dropped before its end is killed and reaped; a reaped child's end is given again, not waited for twice")
    func droppedAndReaped() throws {
        var pid: Int32 = 0
        do {
            let sleeper = try SpawnedChild(["/bin/sleep", "60"], environment: Self.environment)
            pid = sleeper.pid
            withExtendedLifetime(sleeper) { #expect(kill(pid, 0) == 0, "running") }
        }
        #expect(kill(pid, 0) == -1 && errno == ESRCH, "killed and reaped, not a zombie")
        let child = try Self.shell("exit 4")
        #expect(child.wait() == .exited(4) && child.wait() == .exited(4) && child.poll() == .exited(4))
    }
}
