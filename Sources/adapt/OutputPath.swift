import AdaptCore
import CommandLineKit
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The file a command will write, checked before any work is done: a run that trains for an hour and then
/// cannot write its result, or writes it over its own input, has wasted the hour or destroyed the input.
enum OutputPath {
    /// Throws a usage error when `out` (given as `--option`) is the same file as one of `inputs` (compared by
    /// device and inode, so a symlink or a `./` prefix does not hide it), or when `OutputTarget` refuses it: one of
    /// `state`'s own files, a symlink, a directory, a device or a FIFO, or an existing file not of `kind`.
    static func check(_ out: URL, option: String, kind: OutputKind, state: StateDirectory?,
                      inputs: [(option: String, url: URL)]) throws {
        try requireNoInput(out, option: option, inputs: inputs)
        do { try OutputTarget.checkFile(out, kind: kind, state: state) } catch let refusal as OutputRefusal {
            throw UsageError("--\(option) \(refusal)")
        }
    }

    /// `check` for a directory the command writes `files` into.
    static func checkDirectory(_ out: URL, option: String, files: [(name: String, kind: OutputKind)], state: StateDirectory?,
                               inputs: [(option: String, url: URL)]) throws {
        try requireNoInput(out, option: option, inputs: inputs)
        for file in files { try requireNoInput(out.appendingPathComponent(file.name), option: option, inputs: inputs) }
        do { try OutputTarget.checkDirectory(out, files: files, state: state) } catch let refusal as OutputRefusal {
            throw UsageError("--\(option) \(refusal)")
        }
    }

    private static func requireNoInput(_ out: URL, option: String, inputs: [(option: String, url: URL)]) throws {
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
