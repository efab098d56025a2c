import AdaptCore
import Adapters
import Foundation

/// `exports/<lineage>/active.json`: which adapter the export beside it was written from, `{"adapter_digest": HEX}`
/// (the SHA-256 of the adapt adapter file, the registry's `adapter_digest`).
///
/// It is removed before the export is rewritten or removed and written only once `active.gguf` and the
/// `Modelfile` are in place, so a record that names the active version's adapter means the whole export is
/// that version's; a missing record (an export cut short, or written by an adapt before the record existed)
/// means the export has to be written again.
enum ActiveExportRecord {
    static let fileName = "active.json"

    struct Contents: Codable {
        let adapterDigest: String

        enum CodingKeys: String, CodingKey { case adapterDigest = "adapter_digest" }
    }

    /// The adapter the complete export in `directory` holds; nil when there is no (readable) record.
    static func read(in directory: URL) -> Digest? {
        guard let data = try? AtomicFile.read(directory.appendingPathComponent(fileName)),
              let contents = try? JSON.decode(Contents.self, from: data, context: fileName) else { return nil }
        return Digest(hex: contents.adapterDigest)
    }

    static func write(_ adapter: Digest, in directory: URL) throws {
        try AtomicFile.write(JSON.canonical(Contents(adapterDigest: adapter.hex)), to: directory.appendingPathComponent(fileName))
    }

    static func remove(in directory: URL) throws {
        let url = directory.appendingPathComponent(fileName)
        guard FileManager.default.fileExists(atPath: url.path) else { return }
        do { try FileManager.default.removeItem(at: url) } catch {
            throw AdapterExchangeError.io("cannot remove \(url.path): \(error); remove it by hand")
        }
    }
}
