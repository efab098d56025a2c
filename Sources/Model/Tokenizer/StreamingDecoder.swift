/// Turns tokens into text as they are generated, emitting only complete UTF-8.
///
/// A byte-level token can end in the middle of a character (an emoji is often two or three
/// tokens). The decoder holds such a partial sequence back until the bytes that complete it arrive,
/// so no U+FFFD appears mid-stream for valid output. Bytes that can never become valid (a stray
/// continuation byte) are emitted as U+FFFD at once; `finish()` flushes what is left.
public struct StreamingDecoder: Sendable {
    public let tokenizer: Tokenizer
    private var pending: [UInt8] = []

    public init(tokenizer: Tokenizer) { self.tokenizer = tokenizer }

    /// The text that `id` completes; empty while a character is still partial.
    public mutating func append(_ id: Int) throws -> String {
        pending.append(contentsOf: try tokenizer.pieceBytes(id))
        var output: [UInt8] = []
        var index = 0
        var text = ""
        while index < pending.count {
            switch UTF8Validation.prefixStatus(pending, from: index, to: pending.count) {
            case let .complete(length):
                output.append(contentsOf: pending[index..<(index + length)])
                index += length
            case .incomplete:
                text = String(decoding: output, as: UTF8.self)
                pending.removeFirst(index)
                return text
            case let .invalid(length):
                output.append(contentsOf: [0xEF, 0xBF, 0xBD])  // one U+FFFD for bytes that can never be valid
                index += length
            }
        }
        pending.removeAll(keepingCapacity: true)
        return String(decoding: output, as: UTF8.self)
    }

    /// Whatever is still held back (an unfinished character becomes U+FFFD); resets the decoder.
    public mutating func finish() -> String {
        defer { pending.removeAll() }
        return String(decoding: pending, as: UTF8.self)
    }

    /// Whether bytes are being held back for an unfinished character.
    public var hasPending: Bool { !pending.isEmpty }
}
