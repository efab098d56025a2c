import AdaptCore
import Foundation
import Training

/// Refuses a file of the wrong kind where a command would otherwise store or record it and fail much later:
/// `registry add` (an adapter) and `enqueue nightly --model` (a GGUF base model).
///
/// The Registry and the job engine store bytes and paths without knowing formats; this layer sees the
/// formats' modules, so the check lives here.
enum FileFormatCheck {
    /// Throws unless `data` is a whole, intact adapt adapter file (magic, version, trailing SHA-256, tensors).
    static func requireAdapter(_ data: Data, path: String) throws {
        guard data.starts(with: AdapterFile.magic) else {
            throw FileFormatError(path: path, expected: "an adapt adapter file", magic: "ADAPTLRA",
                                  wayOut: "pass the adapter file 'adapt train' or the train step wrote")
        }
        _ = try AdapterFile.decode(data, name: path)
    }

    /// GGUF's magic, "GGUF" (ggml/docs/gguf.md).
    static let ggufMagic = Array("GGUF".utf8)

    /// Throws unless the regular file at `url` starts with GGUF's magic bytes. Reads only those 4 bytes.
    static func requireGGUF(_ url: URL, path: String) throws {
        try RegularFile.requireReadable(url)
        let handle: FileHandle
        do { handle = try FileHandle(forReadingFrom: url) } catch {
            throw CoreError.fileUnreadable(path: path, reason: "permission denied")
        }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: ggufMagic.count)) ?? nil
        guard let head, Array(head) == ggufMagic else {
            throw FileFormatError(path: path, expected: "a GGUF model file", magic: "GGUF",
                                  wayOut: "pass a .gguf model (scripts/fetch-model downloads the default one)")
        }
    }
}

/// A file that is not of the kind a command needs.
struct FileFormatError: Error, CustomStringConvertible {
    let path: String
    let expected: String
    let magic: String
    let wayOut: String

    var description: String { "\(path) is not \(expected) (it does not start with the bytes \"\(magic)\"); \(wayOut)" }
}
