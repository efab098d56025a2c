extension Tokenizer {
    /// The bytes `ids` stand for; special tokens contribute their literal text. When the vocabulary adds a
    /// blank in front of the text (`addSpacePrefix`), the first token's leading blank is dropped, as llama.cpp's
    /// `detokenize` does, so decoding gives back the text that was encoded.
    public func decodeBytes(_ ids: [Int]) throws -> [UInt8] {
        var bytes: [UInt8] = []
        for (index, id) in ids.enumerated() {
            let piece = try pieceBytes(id)
            if index == 0 && addSpacePrefix && piece.first == 0x20 {
                bytes.append(contentsOf: piece.dropFirst())
            } else {
                bytes.append(contentsOf: piece)
            }
        }
        return bytes
    }

    /// The text `ids` stand for; special tokens appear as their literal text, and bytes that do not
    /// form valid UTF-8 become U+FFFD.
    public func decode(_ ids: [Int]) throws -> String {
        String(decoding: try decodeBytes(ids), as: UTF8.self)
    }

    /// The bytes of one token.
    public func pieceBytes(_ id: Int) throws -> [UInt8] {
        guard pieceBytes.indices.contains(id) else { throw ModelError.invalidToken(id: id, vocabulary: count) }
        return pieceBytes[id]
    }

    /// One token for display: its text, with any byte that is not part of valid UTF-8 on its own
    /// (half of an emoji, say) written as `<0xF0>`.
    public func piece(_ id: Int) throws -> String {
        let bytes = try pieceBytes(id)
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        var result = ""
        var index = 0
        while index < bytes.count {
            let length = UTF8Validation.sequenceLength(bytes, at: index)
            if length > 0 {
                result += String(decoding: bytes[index..<(index + length)], as: UTF8.self)
                index += length
            } else {
                result += "<0x" + String(bytes[index], radix: 16, uppercase: true).leftPadded(to: 2) + ">"
                index += 1
            }
        }
        return result
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

/// Where UTF-8 sequences start and end, following the Unicode Standard's table of well-formed byte
/// sequences (chapter 3, D92): no overlong forms, no surrogates, nothing past U+10FFFF.
enum UTF8Validation {
    /// The length of the complete, valid sequence at `index`, or 0 if there is none.
    static func sequenceLength(_ bytes: [UInt8], at index: Int) -> Int {
        let status = prefixStatus(bytes, from: index, to: bytes.count)
        if case let .complete(length) = status { return length }
        return 0
    }

    enum Status: Equatable {
        case complete(Int)
        /// A valid start of a sequence that needs more bytes.
        case incomplete
        /// The first `n` bytes can never start a valid sequence; they stand for one U+FFFD (the
        /// "maximal subpart" practice of the Unicode Standard, chapter 3, which Swift's decoder follows).
        case invalid(Int)
    }

    static func prefixStatus(_ bytes: [UInt8], from index: Int, to end: Int) -> Status {
        let b0 = bytes[index]
        let length: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF  // the allowed range of the second byte
        switch b0 {
        case 0x00...0x7F: return .complete(1)
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: return .invalid(1)
        }
        for offset in 1..<length {
            guard index + offset < end else { return .incomplete }
            let byte = bytes[index + offset]
            let (lo, hi) = offset == 1 ? (low, high) : (UInt8(0x80), UInt8(0xBF))
            guard byte >= lo && byte <= hi else { return .invalid(offset) }
        }
        return .complete(length)
    }
}
