import Foundation

/// Ways of shaping a fuzz input for readers that a random byte string would never get past.
enum FuzzInput {
    /// Two parts: a little-endian u16 length, that many bytes (clamped to what is there), then the rest.
    /// Readers of two files (a PEFT or mlx-lm directory's config and weights) get one of each.
    static func split(_ data: Data) -> (first: Data, second: Data) {
        let bytes = [UInt8](data)
        guard bytes.count >= 2 else { return (Data(), Data(bytes)) }
        let length = min(Int(bytes[0]) | Int(bytes[1]) << 8, bytes.count - 2)
        return (Data(bytes[2..<(2 + length)]), Data(bytes[(2 + length)...]))
    }

    static func joined(_ first: Data, _ second: Data) -> Data {
        precondition(first.count <= 0xFFFF, "a seed's first part is at most 65535 bytes")
        return Data([UInt8(first.count & 0xFF), UInt8(first.count >> 8)]) + first + second
    }

    /// Readers whose container is checked by a digest or a compressor: the first byte chooses between the input
    /// as the file's bytes (even: the container's own checks) and the input as the payload, wrapped into a
    /// valid container by the target (odd: the parser behind the checks).
    static func mode(_ data: Data) -> (wrapped: Bool, rest: Data) {
        guard let first = data.first else { return (false, Data()) }
        return (first & 1 == 1, data.dropFirst())
    }

    /// The input written to a file of this process's own (the GGUF readers map a file); removed afterwards.
    static func withFile(_ data: Data, _ body: (URL) -> Void) {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("adapt-fuzz-\(getpid()).gguf")
        do { try data.write(to: url) } catch { FuzzFinding.fail("file", "cannot write the input to \(url.path): \(error)") }
        defer { try? FileManager.default.removeItem(at: url) }
        body(url)
    }
}

/// The test fixtures seeds are made from, relative to the package root (the fuzz scripts run there).
enum FuzzFixtures {
    static func data(_ path: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(path))
    }

    /// The first `count` non-blank lines of a JSONL fixture, one seed each.
    static func lines(_ path: String, count: Int) throws -> [Data] {
        let text = String(decoding: try data(path), as: UTF8.self)
        return text.split(separator: "\n").prefix(count).map { Data($0.utf8) }
    }
}
