import Foundation

/// The bytes of a grants file, read in place. A regular file is mapped read-only: the kernel pages it in as
/// the reader walks it and drops the pages under pressure, so that a file of many gigabytes (a studio's
/// 10,000,000 grants are 3.6 GB of JSONL) costs the process no memory of its own, however many passes read
/// it. Reading it into memory instead held the file twice over (10.5 GB for that file) and could take a
/// machine's memory. Anything else (a pipe, /dev/stdin) is read whole.
final class GrantFileBytes: @unchecked Sendable {
    /// Valid while this object lives: readers keep it.
    let buffer: UnsafeBufferPointer<UInt8>
    private let release: () -> Void

    /// A copy of `data` (tests and small inputs).
    init(copying data: Data) {
        let storage = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(data.count, 1))
        _ = storage.initialize(from: data)
        buffer = UnsafeBufferPointer(rebasing: storage[0..<data.count])
        release = { storage.deallocate() }
    }

    /// The file at `path`, mapped when it is a regular file.
    init(path: String) throws(GrantImport.Unreadable) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw GrantImport.Unreadable(reason: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw GrantImport.Unreadable(reason: String(cString: strerror(errno))) }
        if (status.st_mode & S_IFMT) == S_IFREG && status.st_size > 0 {
            let length = Int(status.st_size)
            guard let address = mmap(nil, length, PROT_READ, MAP_PRIVATE, descriptor, 0), address != MAP_FAILED else {
                throw GrantImport.Unreadable(reason: "cannot map it: \(String(cString: strerror(errno)))")
            }
            // Read front to back, once or twice: the kernel may read ahead and drop what was read.
            _ = madvise(address, length, MADV_SEQUENTIAL)
            buffer = UnsafeBufferPointer(start: address.assumingMemoryBound(to: UInt8.self), count: length)
            release = { munmap(address, length) }
            return
        }
        // From the descriptor already open: opening a pipe again would make a second reader of it.
        let data: Data
        do {
            data = try FileHandle(fileDescriptor: descriptor, closeOnDealloc: false).readToEnd() ?? Data()
        } catch {
            throw GrantImport.Unreadable(reason: "\(error.localizedDescription)")
        }
        let copy = GrantFileBytes(copying: data)
        buffer = copy.buffer
        release = { withExtendedLifetime(copy) {} }
    }

    deinit { release() }
}
