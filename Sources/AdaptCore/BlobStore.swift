import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Content-addressed files: each blob is named by the SHA-256 of its bytes and verified when read.
///
/// Layout: `blobs/ab/abcdef…` (two-character fan-out keeps directories small).
public struct BlobStore: BlobStorage {
    public let root: URL

    public init(root: URL) { self.root = root }

    public func url(for digest: Digest) -> URL {
        root.appendingPathComponent(String(digest.hex.prefix(2))).appendingPathComponent(digest.hex)
    }

    public func contains(_ digest: Digest) -> Bool {
        FileManager.default.fileExists(atPath: url(for: digest).path)
    }

    /// Stores `data` and returns its digest; storing the same bytes twice writes once. A stored copy is kept
    /// only if it still hashes to its name: a damaged or truncated blob (a bad disk, a half-restored backup)
    /// is rewritten from `data`, so storing the bytes again repairs it instead of pointing at the damage.
    ///
    /// Storing bytes that are already there refreshes the file's access time: the collector (`adapt gc`)
    /// keeps every blob younger than its grace period, so a blob a step has just stored (again) survives until
    /// the step has recorded it. Puts hold the store's lock shared and the collector holds it exclusive while
    /// it decides and deletes, so no put can land between its check of a file and its removal.
    @discardableResult
    public func put(_ data: Data) throws -> Digest {
        let digest = Digest.sha256(data)
        let location = url(for: digest)
        try withLock(exclusive: false) {
            if contains(digest), (try? Digest.sha256(fileAt: location)) == digest {
                // The access time only: the file's modification time still says when its bytes were written.
                // UTIME_NOW and UTIME_OMIT (sys/stat.h macros Swift does not import): now, unchanged.
                var times = [timespec(tv_sec: 0, tv_nsec: (1 << 30) - 1), timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)]
                utimensat(AT_FDCWD, location.path, &times, 0)
                return
            }
            try AtomicFile.write(data, to: location)
        }
        return digest
    }

    /// Runs `body` holding the store's lock file (`blobs/.lock`), shared or exclusive (flock(2): released by
    /// the kernel if the process dies).
    public func withLock<T>(exclusive: Bool, _ body: () throws -> T) throws -> T {
        try PrivateFiles.createDirectory(root)
        let path = root.appendingPathComponent(".lock").path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, PrivateFiles.fileMode)
        guard fd >= 0 else { throw CoreError.fileUnwritable(path: path, reason: AtomicFile.errnoText()) }
        defer { close(fd) }
        while flock(fd, exclusive ? LOCK_EX : LOCK_SH) != 0 {
            guard errno == EINTR else { throw CoreError.fileUnwritable(path: path, reason: AtomicFile.errnoText()) }
        }
        return try body()
    }

    /// Size in bytes and when the blob was last stored (milliseconds since the epoch: the later of its
    /// modification time and the access time `put` sets when the bytes were already there), nil when absent.
    public func attributes(_ digest: Digest) -> (size: Int64, storedMilliseconds: Int64)? {
        var status = stat()
        guard stat(url(for: digest).path, &status) == 0 else { return nil }
        func milliseconds(_ time: timespec) -> Int64 { Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000 }
        return (Int64(status.st_size), max(milliseconds(status.st_mtim), milliseconds(status.st_atim)))
    }

    /// Reads a blob and checks that its bytes still hash to its name.
    public func get(_ digest: Digest) throws -> Data {
        let location = url(for: digest)
        guard let data = FileManager.default.contents(atPath: location.path) else {
            throw CoreError.blobMissing(digest)
        }
        let actual = Digest.sha256(data)
        guard actual == digest else { throw CoreError.blobCorrupt(expected: digest, actual: actual) }
        return data
    }

    /// A blob's bytes without rehashing them, for a reader that hashes them anyway while parsing (an adapter
    /// file, whose own trailing digest is checked in the same pass): hashing 3.7 MB twice costs a hot swap
    /// milliseconds. The caller must compare the digest of what it got with `digest` before using any byte.
    public func getUnverified(_ digest: Digest) throws -> Data {
        guard let data = try AtomicFile.read(url(for: digest)) else { throw CoreError.blobMissing(digest) }
        return data
    }

    /// Every stored digest, sorted; files whose names are not digests (temporaries) are skipped.
    public func all() -> [Digest] {
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)?
            .compactMap { ($0 as? URL)?.lastPathComponent } ?? []
        return files.compactMap { Digest(hex: $0) }.sorted()
    }

    @discardableResult
    public func delete(_ digest: Digest) throws -> Int64? {
        guard let size = attributes(digest)?.size else { return nil }
        try remove(digest)
        return size
    }

    public func storedSize(_ digest: Digest) -> Int64? { attributes(digest)?.size }

    public func remove(_ digest: Digest) throws {
        let location = url(for: digest)
        if FileManager.default.fileExists(atPath: location.path) {
            try FileManager.default.removeItem(at: location)
        }
    }
}
