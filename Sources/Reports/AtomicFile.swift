import Glibc

/// A file (a report, the metrics file) that appears whole or not at all: bytes go to a temporary file in the same directory,
/// which is fsynced and then renamed over the final name (rename is atomic within a file system), and the
/// directory is fsynced so the new name survives a crash. A reader never sees a half-written report, and
/// an existing report is replaced only by a complete one.
public final class AtomicFile {
    public let path: String
    private let temporaryPath: String
    private var descriptor: Int32
    private var committed = false

    /// Creates the directory (and its parents) when missing.
    public init(path: String) throws(FileWriteError) {
        self.path = path
        let directory = AtomicFile.directory(of: path)
        try AtomicFile.makeDirectories(directory)
        let base = String(path.split(separator: "/").last ?? "report")
        AtomicFile.removeOrphans(of: base, in: directory)
        temporaryPath = directory + "/." + base + ".\(getpid()).tmp"
        // A new file only, never through a link: a name planted in a shared directory (a symbolic link to
        // someone's file) makes the write fail instead of writing there.
        unlink(temporaryPath)
        descriptor = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else { throw FileWriteError(path: path, reason: AtomicFile.lastError()) }
    }

    deinit {
        if !committed {
            if descriptor >= 0 { close(descriptor) }
            unlink(temporaryPath)
        }
    }

    public func write(_ bytes: [UInt8]) throws(FileWriteError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw FileWriteError(path: path, reason: AtomicFile.lastError())
            }
            offset += written
        }
    }

    /// Makes the file durable and gives it its final name.
    public func commit() throws(FileWriteError) {
        guard fsync(descriptor) == 0 else { throw FileWriteError(path: path, reason: AtomicFile.lastError()) }
        guard close(descriptor) == 0 else {
            descriptor = -1
            throw FileWriteError(path: path, reason: AtomicFile.lastError())
        }
        descriptor = -1
        guard rename(temporaryPath, path) == 0 else { throw FileWriteError(path: path, reason: AtomicFile.lastError()) }
        committed = true
        let directoryDescriptor = open(AtomicFile.directory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            _ = fsync(directoryDescriptor)
            close(directoryDescriptor)
        }
    }

    /// Writes `bytes` to `path` atomically.
    public static func write(_ bytes: [UInt8], to path: String) throws(FileWriteError) {
        let file = try AtomicFile(path: path)
        try file.write(bytes)
        try file.commit()
    }

    /// Temporary files of this name left by a process that died before its rename (killed, power cut):
    /// removed, so crashes do not pile up hidden files next to finance's reports. A live writer's is kept.
    static func removeOrphans(of base: String, in directory: String) {
        guard let stream = opendir(directory) else { return }
        defer { closedir(stream) }
        let prefix = "." + base + "."
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.hasPrefix(prefix), name.hasSuffix(".tmp"),
                let pid = pid_t(name.dropFirst(prefix.count).dropLast(4)), pid != getpid()
            else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { unlink(directory + "/" + name) }
        }
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func makeDirectories(_ directory: String) throws(FileWriteError) {
        var isDirectory = stat()
        if stat(directory, &isDirectory) == 0 {
            guard (isDirectory.st_mode & S_IFMT) == S_IFDIR else {
                throw FileWriteError(path: directory, reason: "exists and is not a directory")
            }
            return
        }
        let parent = AtomicFile.directory(of: directory)
        if parent != directory { try makeDirectories(parent) }
        guard mkdir(directory, 0o777) == 0 || errno == EEXIST else {
            throw FileWriteError(path: directory, reason: "cannot create the directory: " + AtomicFile.lastError())
        }
    }

    static func lastError() -> String { String(cString: strerror(errno)) }
}

/// A file that could not be written: where, and what the system said.
public struct FileWriteError: Error, Sendable, CustomStringConvertible {
    public let path: String
    public let reason: String

    public var description: String { "cannot write \(path): \(reason)" }
}
