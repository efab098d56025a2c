import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes that are either wholly there or not there at all, even across a power cut:
/// temp file → fsync → rename → fsync(directory) (the rename is only durable once the directory is synced).
public enum AtomicFile {
    /// A symlink, directory, device or FIFO at `url` is refused rather than replaced: a link is never written
    /// through (the rename replaces a link planted after the check, never the file it names).
    ///
    /// The file is readable by its owner only (0600, whatever the umask and whatever mode a replaced file had):
    /// what adapt writes is trained on, or holds, a user's messages. Directories it creates are 0700.
    public static func write(_ data: Data, to requested: URL) throws {
        try write(to: requested) { append in try data.withUnsafeBytes { try append($0) } }
    }

    /// Writes the bytes `produce` hands to its argument, in order, with the guarantees of `write(_:to:)`: for files
    /// too large to hold in memory whole (a synthesized model of a billion weights).
    public static func write(to requested: URL, _ produce: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws {
        let url = try RegularFile.replaceablePath(requested)
        let directory = url.deletingLastPathComponent()
        try PrivateFiles.createDirectory(directory)
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp")
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, PrivateFiles.fileMode)
        guard fd >= 0 else { throw CoreError.fileUnwritable(path: temporary.path, reason: errnoText()) }
        var ok = false
        defer {
            if !ok { unlink(temporary.path) }
        }
        do {
            defer { close(fd) }
            try produce { raw in
                var offset = 0
                while offset < raw.count {
                    let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw CoreError.fileUnwritable(path: temporary.path, reason: errnoText())
                    }
                    offset += n
                }
            }
            guard fsync(fd) == 0 else { throw CoreError.fileUnwritable(path: temporary.path, reason: errnoText()) }
        }
        guard rename(temporary.path, url.path) == 0 else {
            throw CoreError.fileUnwritable(path: url.path, reason: errnoText())
        }
        ok = true
        try syncDirectory(directory)
    }

    public static func syncDirectory(_ directory: URL) throws {
        let fd = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw CoreError.fileUnwritable(path: directory.path, reason: errnoText()) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw CoreError.fileUnwritable(path: directory.path, reason: errnoText()) }
    }

    /// The whole file in one `read` (more only if the kernel returns less), or nil when there is no file.
    ///
    /// The counterpart of `write` for files read whole on a latency budget (an adapter on hot swap): the size
    /// comes from `fstat`, so the buffer is allocated once and filled without the growing and copying a
    /// read-until-EOF loop does. A file that shrinks meanwhile yields what was there; its reader's own checks
    /// (a length or a digest) then refuse it.
    public static func read(_ url: URL) throws -> Data? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        try RegularFile.requireReadable(url)
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw CoreError.fileUnreadable(path: url.path, reason: errnoText())
        }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw CoreError.fileUnreadable(path: url.path, reason: errnoText()) }
        let size = Int(status.st_size)
        guard size > 0 else { return Data() }
        guard let buffer = malloc(size) else {
            throw CoreError.fileUnreadable(path: url.path, reason: "cannot allocate \(size) bytes")
        }
        var filled = 0
        while filled < size {
            let got = Glibc.read(fd, buffer + filled, size - filled)
            if got < 0, errno == EINTR { continue }
            if got == 0 { break }
            guard got > 0 else {
                let reason = errnoText()
                free(buffer)
                throw CoreError.fileUnreadable(path: url.path, reason: reason)
            }
            filled += got
        }
        return Data(bytesNoCopy: buffer, count: filled, deallocator: .free)
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}
