import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Writes a large file through a small buffer, flushed with write(2) and continued after a partial write, to
/// a temporary name renamed into place once whole. Foundation's `Data.write(to:)` wrote a 3.5 GB world
/// wrong: past 2 GiB (Linux's write(2) stops at 0x7ffff000 bytes a call) the file went on with its first
/// bytes again, and the whole file had to be in memory first.
struct LineFileWriter {
    struct Failure: Error, CustomStringConvertible {
        let path: String
        let operation: String
        let code: Int32
        var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
    }

    let path: String
    private let temporary: String
    private let descriptor: Int32
    private let chunkSize: Int
    private var buffer = Data()

    init(path: String, chunkSize: Int = 1 << 20) throws(Failure) {
        self.path = path
        self.chunkSize = max(1, chunkSize)
        temporary = path + ".partial-\(getpid())"
        descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Failure(path: temporary, operation: "open", code: errno) }
        buffer.reserveCapacity(self.chunkSize)
    }

    mutating func append(_ data: Data) throws(Failure) {
        buffer.append(data)
        if buffer.count >= chunkSize { try flush() }
    }

    mutating func appendLine(_ data: Data) throws(Failure) {
        try append(data)
        try append(Data([UInt8(ascii: "\n")]))
    }

    /// Writes what is buffered, then closes and renames the file into place.
    mutating func finish() throws(Failure) {
        try flush()
        guard fsync(descriptor) == 0 else { throw Failure(path: temporary, operation: "fsync", code: errno) }
        guard close(descriptor) == 0 else { throw Failure(path: temporary, operation: "close", code: errno) }
        guard rename(temporary, path) == 0 else { throw Failure(path: path, operation: "rename", code: errno) }
    }

    private mutating func flush() throws(Failure) {
        var failure: Int32?
        buffer.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count, let base = bytes.baseAddress {
                let written = write(descriptor, base + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += written
            }
        }
        if let failure { throw Failure(path: temporary, operation: "write", code: failure) }
        buffer.removeAll(keepingCapacity: true)
    }
}
