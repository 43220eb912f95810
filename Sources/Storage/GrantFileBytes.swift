import Foundation

/// The bytes of a grants file, read in place. A regular file is mapped read-only: the kernel pages it in as
/// the reader walks it and drops the pages under pressure, so that a file of many gigabytes (a studio's
/// 10,000,000 grants are 3.6 GB of JSONL) costs the process no memory of its own, however many passes read
/// it. Reading it into memory instead held the file three times over (10.5 GB for that file) and could take
/// a machine's memory. Anything else (a pipe, /dev/stdin, a file system that cannot map) is read whole.
///
/// A mapping is not a snapshot: a file written to while it is imported would show the second pass other
/// bytes than the first validated, so `isUnchanged` is asked before the import commits. A file truncated
/// under the mapping ends the process with SIGBUS, which commits nothing (docs/operations.md says not to
/// change a file being imported).
final class GrantFileBytes: @unchecked Sendable {
    /// Valid while this object lives: readers keep it.
    let buffer: UnsafeBufferPointer<UInt8>
    private let release: () -> Void
    /// The mapped file's descriptor and what fstat said of it when mapped; nil for bytes read whole.
    private let mapped: (descriptor: Int32, identity: [Int])?

    private init(buffer: UnsafeBufferPointer<UInt8>, release: @escaping () -> Void, mapped: (descriptor: Int32, identity: [Int])?) {
        self.buffer = buffer
        self.release = release
        self.mapped = mapped
    }

    /// A copy of `data` (tests, small inputs, and what a pipe gave).
    convenience init(copying data: Data) {
        let storage = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(data.count, 1))
        _ = storage.initialize(from: data)
        self.init(buffer: UnsafeBufferPointer(rebasing: storage[0..<data.count]), release: { storage.deallocate() }, mapped: nil)
    }

    /// The file at `path`, mapped when it is a regular file.
    convenience init(path: String) throws(GrantImport.Unreadable) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw GrantImport.Unreadable(reason: String(cString: strerror(errno))) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw GrantImport.Unreadable(reason: reason)
        }
        if (status.st_mode & S_IFMT) == S_IFREG && status.st_size > 0,
            let address = mmap(nil, Int(status.st_size), PROT_READ, MAP_PRIVATE, descriptor, 0), address != MAP_FAILED
        {
            let length = Int(status.st_size)
            // Read front to back, once or twice: the kernel may read ahead and drop what was read.
            _ = madvise(address, length, MADV_SEQUENTIAL)
            self.init(
                buffer: UnsafeBufferPointer(start: address.assumingMemoryBound(to: UInt8.self), count: length),
                release: {
                    munmap(address, length)
                    close(descriptor)
                }, mapped: (descriptor, Self.identity(status)))
            return
        }
        // From the descriptor already open: opening a pipe again would make a second reader of it.
        defer { close(descriptor) }
        let data: Data
        do {
            data = try FileHandle(fileDescriptor: descriptor, closeOnDealloc: false).readToEnd() ?? Data()
        } catch {
            throw GrantImport.Unreadable(reason: "\(error.localizedDescription)")
        }
        self.init(copying: data)
    }

    /// Whether a mapped file is as it was when mapped (size, modification and change times, inode).
    var isUnchanged: Bool {
        guard let mapped else { return true }
        var status = stat()
        return fstat(mapped.descriptor, &status) == 0 && Self.identity(status) == mapped.identity
    }

    private static func identity(_ status: stat) -> [Int] {
        [
            Int(status.st_dev), Int(status.st_ino), Int(status.st_size), Int(status.st_mtim.tv_sec), Int(status.st_mtim.tv_nsec),
            Int(status.st_ctim.tv_sec), Int(status.st_ctim.tv_nsec),
        ]
    }

    deinit { release() }
}
