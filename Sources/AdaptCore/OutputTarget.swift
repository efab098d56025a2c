import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What a command may write where a user points it (`--out`), checked before any work is done.
///
/// The rule (DESIGN.md, Privacy): nothing a user names as an output replaces the state's database, WAL, locks,
/// blobs, exports or models, or follows a link; and a file already there is replaced only when it is a regular
/// file of the kind the command writes (or empty), so a mistyped path costs a refusal, not someone's file.
/// Files a command reads are compared by the command itself, which knows their option names.
public enum OutputTarget {
    /// Throws `OutputRefusal` unless a file of `kind` may be written at `url` beside `state`.
    public static func checkFile(_ url: URL, kind: OutputKind, state: StateDirectory?) throws {
        let location = canonical(url)
        if let state, let entry = stateEntry(location, of: state) {
            throw OutputRefusal(path: url.path, reason: "it is \(entry), which adapt never writes over; choose another path")
        }
        try requireReplaceable(url, kind: kind)
    }

    /// Throws `OutputRefusal` unless `url` may be a directory into which the files `files` are written: a
    /// missing path, or a real directory in which each of those names is missing or a file of its kind.
    public static func checkDirectory(_ url: URL, files: [(name: String, kind: OutputKind)], state: StateDirectory?) throws {
        let location = canonical(url)
        let entries = [location] + files.map { location.appendingPathComponent($0.name) }
        if let state, let entry = entries.lazy.compactMap({ stateEntry($0, of: state) }).first {
            throw OutputRefusal(path: url.path, reason: "it is \(entry), which adapt never writes into; choose another path")
        }
        var status = stat()
        guard lstat(url.path, &status) == 0 else { return }
        switch status.st_mode & S_IFMT {
        case S_IFDIR: break
        case S_IFLNK: throw OutputRefusal(path: url.path, reason: "it is a symbolic link, which adapt does not write through; name the directory itself")
        default: throw OutputRefusal(path: url.path, reason: "it is a file, and this output is a directory; pass a directory path")
        }
        for file in files { try requireReplaceable(url.appendingPathComponent(file.name), kind: file.kind) }
    }

    /// Missing, empty, or a regular file (not a link) that starts as `kind` does.
    static func requireReplaceable(_ url: URL, kind: OutputKind) throws {
        var status = stat()
        guard lstat(url.path, &status) == 0 else { return }
        switch status.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFLNK: throw OutputRefusal(path: url.path, reason: "it is a symbolic link, which adapt does not write through; name the file itself")
        case S_IFDIR: throw OutputRefusal(path: url.path, reason: "it is a directory, which a write would replace; choose a file path")
        default: throw OutputRefusal(path: url.path, reason: "it is not a regular file (a device, FIFO or socket); choose a file path")
        }
        guard status.st_size > 0 else { return }
        let fd = open(url.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            throw OutputRefusal(path: url.path, reason: "it exists and cannot be read to see what it is (\(AtomicFile.errnoText())); choose another path")
        }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: OutputKind.headLength)
        let got = read(fd, &head, head.count)
        guard got > 0, kind.matches(Data(head.prefix(got)), of: url) else {
            throw OutputRefusal(path: url.path, reason: "it exists and is not \(kind.name), the kind of file this command writes; "
                                + "adapt replaces only its own kind of file: choose another path, or remove it first")
        }
    }

    /// What of `state` `location` is, if it is one of the engine's own entries: the database and its WAL, SHM and
    /// journal, the work lock, anything under blobs/, scratch/ and exports/, or a model already in models/.
    static func stateEntry(_ location: URL, of state: StateDirectory) -> String? {
        let root = realpathString(state.root.path) ?? canonical(state.root).path
        let path = location.path
        guard path == root || path.hasPrefix(root + "/") else { return nil }
        let parts = path.dropFirst(root.count).split(separator: "/").map(String.init)
        guard let first = parts.first else { return "the state directory" }
        switch first {
        case "adapt.sqlite": return "the state's database"
        case "adapt.sqlite-wal", "adapt.sqlite-shm", "adapt.sqlite-journal":
            return "the state database's \(first.dropFirst("adapt.sqlite-".count).uppercased()) file"
        case "work.lock": return "the state's work lock"
        case "blobs": return "the state's blob store"
        case "scratch": return "the state's scratch directory"
        case "exports": return "the state's active exports"
        case "models":
            if parts.count == 1 { return "the state's models directory" }
            var status = stat()
            return lstat(path, &status) == 0 ? "a model in the state's models directory" : nil
        default: return nil
        }
    }

    /// `url` with every symbolic link in its existing directories resolved and `.` and `..` taken as the kernel
    /// takes them (after the link before them, not by text); the last component is kept as it is (a link there is
    /// refused, never followed), and missing directories are appended as given.
    static func canonical(_ url: URL) -> URL {
        let parts = url.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard let last = parts.last else { return URL(fileURLWithPath: "/") }
        var directories = Array(parts.dropLast())
        var rest: [String] = []
        var resolved = "/"
        while true {
            if let real = realpathString("/" + directories.joined(separator: "/")) { resolved = real; break }
            guard let missing = directories.popLast() else { break }
            rest.insert(missing, at: 0)
        }
        var result = URL(fileURLWithPath: resolved)
        for part in rest + [last] {
            switch part {
            case ".": continue
            case "..": result.deleteLastPathComponent()
            default: result.appendPathComponent(part)
            }
        }
        return result
    }

    private static func realpathString(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

/// A kind of file a command writes, told by its first bytes.
public struct OutputKind: Sendable {
    /// How many bytes of an existing file `matches` sees.
    static let headLength = 64

    /// For messages: "a GGUF file".
    public let name: String
    private let recognises: @Sendable (Data, URL) -> Bool

    /// A kind told by a file's first bytes (up to 64).
    public init(_ name: String, recognises: @escaping @Sendable (Data) -> Bool) {
        self.init(name) { head, _ in recognises(head) }
    }

    /// A kind told by a file's first bytes and, when they are not enough, by reading the file at the URL.
    public init(_ name: String, recognises: @escaping @Sendable (Data, URL) -> Bool) {
        self.name = name
        self.recognises = recognises
    }

    /// A kind whose files start with `magic`.
    public init(_ name: String, magic: Data) {
        self.init(name) { head in head.starts(with: magic) }
    }

    /// Whether the file at `url`, starting with `head` (its first bytes, up to 64), is of this kind.
    public func matches(_ head: Data, of url: URL) -> Bool { recognises(head, url) }

    /// GGUF, by its magic (ggml's gguf.md: the file starts with the bytes "GGUF").
    public static let gguf = OutputKind("a GGUF file", magic: Data("GGUF".utf8))
}

/// A path a command refuses to write, with the reason and the way out.
public struct OutputRefusal: Error, Equatable, CustomStringConvertible {
    public let path: String
    public let reason: String
    public var description: String { "\(path): \(reason)" }
}
