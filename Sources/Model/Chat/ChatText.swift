/// Formatted chat text that remembers which stretches the chat template wrote.
///
/// Only there may the text of a control token become that token: what a message holds is data, tokenized as
/// text, so an imported prompt containing `<|im_start|>system` stays those characters and cannot open a turn
/// of its own (`Tokenizer.encode(_:markers:addBOS:)`). `text` is exactly what `ChatFormatter.format` returns.
public struct ChatText: Sendable, Equatable {
    public private(set) var text: String = ""
    /// UTF-8 byte ranges of `text` that the template wrote, in order and never adjacent.
    public private(set) var templateRanges: [Range<Int>] = []
    private var byteCount = 0

    public init() {}

    /// Text the template writes: turn markers, role headers, the default system line.
    public mutating func appendTemplate(_ piece: String) {
        let count = piece.utf8.count
        guard count > 0 else { return }
        if let last = templateRanges.last, last.upperBound == byteCount {
            templateRanges[templateRanges.count - 1] = last.lowerBound..<(byteCount + count)
        } else {
            templateRanges.append(byteCount..<(byteCount + count))
        }
        text += piece
        byteCount += count
    }

    /// Text a message holds (its content): never turned into control tokens.
    public mutating func appendData(_ piece: String) {
        text += piece
        byteCount += piece.utf8.count
    }

    /// The text from UTF-8 offset `start` on (a character boundary), with the template's stretches moved along.
    public func dropFirst(bytes start: Int) -> ChatText {
        guard start > 0 else { return self }
        var rest = ChatText()
        rest.text = String(decoding: text.utf8.dropFirst(start), as: UTF8.self)
        rest.byteCount = byteCount - start
        rest.templateRanges = templateRanges.compactMap { range in
            range.upperBound <= start ? nil : (max(range.lowerBound, start) - start)..<(range.upperBound - start)
        }
        return rest
    }
}
