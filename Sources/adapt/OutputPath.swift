import AdaptCore
import CommandLineKit
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The file a command will write, checked before any work is done: a run that trains for an hour and then
/// cannot write its result, or writes it over its own input, has wasted the hour or destroyed the input.
enum OutputPath {
    /// Throws a usage error when `out` (given as `--option`) is a directory, a device or a FIFO, or is the same
    /// file as one of `inputs` (compared by device and inode, so a symlink or a `./` prefix does not hide it).
    static func check(_ out: URL, option: String, inputs: [(option: String, url: URL)]) throws {
        do { _ = try RegularFile.replaceablePath(out) } catch let CoreError.fileUnwritable(_, reason) {
            throw UsageError("--\(option): \(reason)")
        }
        for input in inputs where sameFile(out, input.url) {
            throw UsageError("--\(option) is the --\(input.option) file, which writing would destroy; choose another --\(option) path")
        }
    }

    /// Whether both paths name one existing file.
    static func sameFile(_ a: URL, _ b: URL) -> Bool {
        var first = stat(), second = stat()
        guard stat(a.path, &first) == 0, stat(b.path, &second) == 0 else { return false }
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }
}
