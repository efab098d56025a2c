import AdaptCore
import Adapters
import Foundation

/// Refuses a file of the wrong kind where a command would otherwise store it and fail much later: `registry
/// add` takes only adapt adapters.
///
/// The Registry stores bytes without knowing formats; the service behind `registry add` decides which format
/// it accepts, so the check lives here.
enum FileFormatCheck {
    /// Throws unless `data` is a whole, intact adapt adapter file (magic, version, trailing SHA-256, tensors).
    static func requireAdapter(_ data: Data, path: String) throws {
        guard data.starts(with: AdapterFile.magic) else {
            throw FileFormatError(path: path, expected: "an adapt adapter file", magic: "ADAPTLRA",
                                  wayOut: "pass the adapter file 'adapt train' or the train step wrote")
        }
        _ = try AdapterFile.decode(data, name: path)
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
