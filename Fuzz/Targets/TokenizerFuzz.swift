import AdaptCore
import Foundation
import Model

/// The default model's tokenizer on any text: valid UTF-8 must come back byte for byte from decode(encode(text)),
/// with special-token parsing on or off, and any id sequence must decode or be refused, never trap.
///
/// The round trip is asked only of text whose every byte has a byte token: SmolLM2's vocabulary lacks 21 of the
/// 256 (six control characters among them), and the encoder drops such a byte as llama.cpp's does (the
/// tokens must equal llama.cpp's), so no decoder could give it back.
public enum TokenizerFuzz: FuzzTarget {
    public static let name = "tokenizer"

    /// `ADAPT_FUZZ_MODEL`, or the default model in the checkout's state/ (scripts/fetch-model puts it there).
    static let tokenizer: Tokenizer = {
        let path = ProcessInfo.processInfo.environment["ADAPT_FUZZ_MODEL"] ?? "state/models/\(DefaultModel.fileName)"
        do { return try Tokenizer(gguf: GGUFFile(url: URL(fileURLWithPath: path))) } catch {
            FuzzFinding.fail(name, "the tokenizer of \(path) does not load (\(error)); run scripts/fetch-model or set ADAPT_FUZZ_MODEL")
        }
    }()

    /// Bytes that are a token on their own in the vocabulary.
    static let representable: [Bool] = {
        var result = [Bool](repeating: false, count: 256)
        for id in 0..<tokenizer.count {
            if let bytes = try? tokenizer.pieceBytes(id), bytes.count == 1 { result[Int(bytes[0])] = true }
        }
        return result
    }()

    public static func run(_ data: Data) {
        let tokenizer = Self.tokenizer
        if let text = String(validating: data, as: UTF8.self), data.allSatisfy({ representable[Int($0)] }) {
            for parseSpecial in [false, true] {
                let ids = tokenizer.encode(text, parseSpecial: parseSpecial)
                guard let bytes = try? tokenizer.decodeBytes(ids) else {
                    FuzzFinding.fail(name, "encode gave an id decode refuses (parseSpecial: \(parseSpecial))")
                }
                guard bytes.elementsEqual(data) else {
                    FuzzFinding.fail(name, "decode(encode(text)) differs from the text (parseSpecial: \(parseSpecial))")
                }
            }
        }
        // The same bytes as ids (little-endian u16 pairs, some past the vocabulary) must decode or throw.
        var ids: [Int] = []
        var index = data.startIndex
        while index + 1 < data.endIndex {
            ids.append(Int(data[index]) | Int(data[index + 1]) << 8)
            index += 2
        }
        _ = try? tokenizer.decode(ids)
        for id in ids.prefix(8) { _ = try? tokenizer.piece(id) }
    }

    public static func seeds() throws -> [Data] {
        let fixture = try JSONDecoder().decode(JSONValue.self, from: FuzzFixtures.data("Tests/ModelTests/Fixtures/smollm2_tokens.json"))
        let texts = (fixture["cases"]?.arrayValue ?? []).compactMap { $0["text"]?.stringValue }
        // Distinct texts, short ones first (they mutate fastest), at most 40.
        var seen: Set<String> = []
        let chosen = texts.filter { !$0.isEmpty && $0.utf8.count <= 512 && seen.insert($0).inserted }.prefix(40)
        return chosen.map { Data($0.utf8) }
    }
}
