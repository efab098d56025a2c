import AdaptCore
import Foundation
import TestSupport
import Training
#if canImport(Glibc)
import Glibc
#endif

/// Looks for a user's text in every file under a directory: as stored (UTF-8), as JSON escapes it, and
/// inside any zstd frame found in a file (checkpoints are zstd-compressed). Each text is also searched by
/// fragments, so a copy split across two database pages (SQLite overflow pages) is still found.
struct PrivacyScan {
    /// One text to look for, and fragments of it that no other stored text contains.
    struct Needle {
        let label: String
        let patterns: [Data]
    }

    /// Needles for `texts`, with fragments that do not occur in any of `others` (the texts that stay).
    static func needles(_ texts: [(label: String, text: String)], others: [String]) -> [Needle] {
        texts.map { label, text in
            var patterns: Set<String> = [text]
            let escaped = JSON.canonicalString(JSONValue.string(text)).dropFirst().dropLast()
            patterns.insert(String(escaped))
            let characters = Array(text)
            let width = min(20, characters.count)
            for start in stride(from: 0, through: characters.count - width, by: max(1, width / 2)) {
                let fragment = String(characters[start..<(start + width)])
                if !others.contains(where: { $0.contains(fragment) }) { patterns.insert(fragment) }
            }
            return Needle(label: label, patterns: patterns.map { Data($0.utf8) })
        }
    }

    /// "path: label" for every file (or zstd frame in a file) under `root` holding one of the needles.
    static func hits(_ needles: [Needle], under root: URL) -> [String] {
        var found: [String] = []
        for path in files(under: root) {
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            var contents = [("", data)]
            for (index, frame) in zstdFrames(in: data).enumerated() { contents.append(("zstd frame \(index)", frame)) }
            for (where_, bytes) in contents {
                for needle in needles where needle.patterns.contains(where: { bytes.range(of: $0) != nil }) {
                    found.append("\(path)\(where_.isEmpty ? "" : " (\(where_))"): \(needle.label)")
                }
            }
        }
        return found
    }

    /// Every regular file under `root`.
    static func files(under root: URL) -> [String] {
        var out: [String] = []
        var pending = [root.path]
        while let path = pending.popLast() {
            var status = stat()
            guard lstat(path, &status) == 0 else { continue }
            switch status.st_mode & S_IFMT {
            case S_IFDIR:
                pending += ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).map { path + "/" + $0 }
            case S_IFREG:
                out.append(path)
            default:
                break
            }
        }
        return out.sorted()
    }

    /// Every path under `root` (itself included) with its permission bits.
    static func modes(under root: URL) -> [(path: String, isDirectory: Bool, mode: mode_t)] {
        var out: [(String, Bool, mode_t)] = []
        var pending = [root.path]
        while let path = pending.popLast() {
            var status = stat()
            guard lstat(path, &status) == 0 else { continue }
            let isDirectory = status.st_mode & S_IFMT == S_IFDIR
            out.append((path, isDirectory, status.st_mode & 0o7777))
            if isDirectory {
                pending += ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).map { path + "/" + $0 }
            }
        }
        return out.sorted { $0.0 < $1.0 }
    }

    /// The decompressed contents of every zstd frame (magic 28 B5 2F FD, RFC 8878 §3.1.1) that decodes.
    static func zstdFrames(in data: Data) -> [Data] {
        let magic = Data([0x28, 0xB5, 0x2F, 0xFD])
        var frames: [Data] = []
        var searchFrom = data.startIndex
        while let range = data.range(of: magic, in: searchFrom..<data.endIndex) {
            if let frame = try? Zstd.decompress(Data(data[range.lowerBound...]), limit: 1 << 28) { frames.append(frame) }
            searchFrom = range.upperBound
        }
        return frames
    }

    /// Total bytes of the regular files under `root`.
    static func size(of root: URL) -> Int {
        files(under: root).reduce(0) { total, path in
            var status = stat()
            return total + (stat(path, &status) == 0 ? Int(status.st_size) : 0)
        }
    }
}

/// Runs the built `adapt` under `/bin/sh` after `setup` (e.g. `umask 022`, `ulimit -f 64`), so the limit or
/// mask applies to that process only.
func adaptUnderShell(_ setup: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> ProcessResult {
    try await blocking {
        try Executables.run(executableAt: URL(fileURLWithPath: "/bin/sh"),
                            ["-c", "\(setup); exec \"$0\" \"$@\"", Executables.url("adapt").path] + arguments,
                            environment: environment)
    }
}
