import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes that are either wholly there or not there at all, even across a power cut:
/// temp file → fsync → rename → fsync(directory) (the rename is only durable once the directory is synced).
public enum AtomicFile {
    public static func write(_ data: Data, to url: URL) throws {
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp")
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CoreError.fileUnwritable(path: temporary.path, reason: errnoText()) }
        var ok = false
        defer {
            if !ok { unlink(temporary.path) }
        }
        do {
            defer { close(fd) }
            try data.withUnsafeBytes { raw in
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

    static func errnoText() -> String { String(cString: strerror(errno)) }
}
