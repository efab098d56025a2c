/// The rule that splits text into words before byte-level BPE merges within each word.
///
/// GGUF names the rule in `tokenizer.ggml.pre`. Each case reproduces what llama.cpp runs for that
/// name (llama-vocab.cpp picks the regexes, unicode.cpp runs hand-written scanners for them), including
/// where llama.cpp's scanners differ from a textbook regex engine:
/// - words never cross the boundary of an earlier split (the lookahead of `\s+(?!\S)` stops there);
/// - `gpt2`/`smollm` contractions (`'s|'t|'re|'ve|'m|'ll|'d`) match lower case only, while
///   `llama3`/`qwen2` use the case-insensitive `(?i:…)` form;
/// - `smollm` first isolates every `\p{N}` code point, so digits never join a word or each other.
public enum PreTokenizer: String, Sendable, CaseIterable {
    /// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`
    case gpt2
    /// `\p{N}` isolated first, then the `gpt2` expression (SmolLM, StarCoder, Command-R).
    case smollm
    /// `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
    case llama3
    /// The `llama3` expression with single digits (`\p{N}`) instead of `\p{N}{1,3}`.
    case qwen2

    /// The rule for a `tokenizer.ggml.pre` value, using the names llama.cpp accepts for the same rule.
    public init?(ggufName: String) {
        switch ggufName {
        case "gpt2", "gpt-2", "phi-2", "mpt", "olmo", "jais", "jina-es", "jina-de", "jina-v2-es", "jina-v2-de",
             "gigachat", "a.x-4.0", "mellum":
            self = .gpt2
        case "smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b":
            self = .smollm
        case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2":
            self = .llama3
        case "qwen2", "deepseek-r1-qwen", "kormo", "stablelm2":
            self = .qwen2
        default:
            return nil
        }
    }

    /// Whether a word that is itself a vocabulary token is taken whole, skipping the merges
    /// (llama.cpp sets `ignore_merges` for the Llama-3 rule only).
    var ignoresMerges: Bool { self == .llama3 }

    /// Appends to `ends` the end index of each word of `scalars[range]`, in order; words cover the
    /// range without gaps. `classes[i]` is the `ScalarClass` raw value of `scalars[i]`.
    func split(_ scalars: UnsafeBufferPointer<UInt32>, _ classes: UnsafeBufferPointer<UInt8>,
               _ range: Range<Int>, into ends: inout [Int]) {
        switch self {
        case .gpt2:
            Self.splitGPT2(scalars, classes, range, into: &ends)
        case .smollm:
            // First stage: each number code point is a chunk of its own; the rest splits with gpt2.
            var start = range.lowerBound
            for index in range where classes[index] & ScalarClass.number.rawValue != 0 {
                if start < index { Self.splitGPT2(scalars, classes, start..<index, into: &ends) }
                ends.append(index + 1)
                start = index + 1
            }
            if start < range.upperBound { Self.splitGPT2(scalars, classes, start..<range.upperBound, into: &ends) }
        case .llama3:
            Self.splitLlama3(scalars, classes, range, maxDigits: 3, into: &ends)
        case .qwen2:
            Self.splitLlama3(scalars, classes, range, maxDigits: 1, into: &ends)
        }
    }

    private static let letter = ScalarClass.letter.rawValue
    private static let number = ScalarClass.number.rawValue
    private static let space = ScalarClass.whitespace.rawValue
    /// The class outside the chunk: no bit set, and distinct from an in-range "other" code point.
    private static let outside: UInt8 = 0x80
    private static let apostrophe: UInt32 = 0x27, blank: UInt32 = 0x20, cr: UInt32 = 0x0D, lf: UInt32 = 0x0A

    /// True for `[^\s\p{L}\p{N}]` inside the chunk.
    @inline(__always) private static func isOther(_ c: UInt8) -> Bool { c & (letter | number | space | outside) == 0 }

    /// The length of a contraction starting at `pos` (an apostrophe), or 0.
    @inline(__always)
    private static func contraction(_ s: UnsafeBufferPointer<UInt32>, _ pos: Int, _ end: Int, caseless: Bool) -> Int {
        guard s[pos] == apostrophe, pos + 1 < end else { return 0 }
        func lower(_ v: UInt32) -> UInt32 { caseless && v >= 0x41 && v <= 0x5A ? v | 0x20 : v }
        let next = lower(s[pos + 1])
        if next == 0x73 || next == 0x74 || next == 0x6D || next == 0x64 { return 2 }  // s t m d
        guard pos + 2 < end else { return 0 }
        let third = lower(s[pos + 2])
        if (next == 0x72 && third == 0x65) || (next == 0x76 && third == 0x65) || (next == 0x6C && third == 0x6C) {
            return 3  // re ve ll
        }
        return 0
    }

    private static func splitGPT2(_ s: UnsafeBufferPointer<UInt32>, _ k: UnsafeBufferPointer<UInt8>,
                                  _ range: Range<Int>, into ends: inout [Int]) {
        let end = range.upperBound
        @inline(__always) func cls(_ i: Int) -> UInt8 { i < end ? k[i] : outside }
        var pos = range.lowerBound
        while pos < end {
            let c = s[pos]
            let length = contraction(s, pos, end, caseless: false)
            if length > 0 {
                pos += length
                ends.append(pos)
                continue
            }
            let leadingSpace = c == blank
            let f2 = leadingSpace ? cls(pos + 1) : k[pos]
            if f2 & letter != 0 {  // ` ?\p{L}+`
                if leadingSpace { pos += 1 }
                while cls(pos) & letter != 0 { pos += 1 }
                ends.append(pos)
                continue
            }
            if f2 & number != 0 {  // ` ?\p{N}+`
                if leadingSpace { pos += 1 }
                while cls(pos) & number != 0 { pos += 1 }
                ends.append(pos)
                continue
            }
            if isOther(f2) {  // ` ?[^\s\p{L}\p{N}]+`
                if leadingSpace { pos += 1 }
                while isOther(cls(pos)) { pos += 1 }
                ends.append(pos)
                continue
            }
            var run = 0
            while cls(pos + run) & space != 0 { run += 1 }
            if run > 1 && pos + run < end {  // `\s+(?!\S)`: leave the last blank to the next word
                pos += run - 1
            } else if run > 0 {  // `\s+`
                pos += run
            } else {
                pos += 1
            }
            ends.append(pos)
        }
    }

    private static func splitLlama3(_ s: UnsafeBufferPointer<UInt32>, _ k: UnsafeBufferPointer<UInt8>,
                                    _ range: Range<Int>, maxDigits: Int, into ends: inout [Int]) {
        let end = range.upperBound
        @inline(__always) func cls(_ i: Int) -> UInt8 { i < end ? k[i] : outside }
        var pos = range.lowerBound
        while pos < end {
            let c = s[pos]
            let f = k[pos]
            let length = contraction(s, pos, end, caseless: true)
            if length > 0 {
                pos += length
                ends.append(pos)
                continue
            }
            // `[^\r\n\p{L}\p{N}]?\p{L}+`
            if !(c == cr || c == lf || f & number != 0) && (f & letter != 0 || cls(pos + 1) & letter != 0) {
                pos += 1
                while cls(pos) & letter != 0 { pos += 1 }
                ends.append(pos)
                continue
            }
            // `\p{N}{1,maxDigits}`
            if f & number != 0 {
                var start = pos
                while cls(pos) & number != 0 {
                    pos += 1
                    if pos - start >= maxDigits {
                        ends.append(pos)
                        start = pos
                    }
                }
                if pos > start { ends.append(pos) }
                continue
            }
            // ` ?[^\s\p{L}\p{N}]+[\r\n]*`; llama.cpp tests the code point after a blank for the class
            // but the blank itself for being in range, so a lone blank at a chunk's end also lands here.
            let f2 = c == blank ? cls(pos + 1) : f
            if f2 & (letter | number | space) == 0 {
                if c == blank { pos += 1 }
                while isOther(cls(pos)) { pos += 1 }
                while pos < end && (s[pos] == cr || s[pos] == lf) { pos += 1 }
                ends.append(pos)
                continue
            }
            var run = 0
            var lastNewline = -1
            while cls(pos + run) & space != 0 {
                if s[pos + run] == cr || s[pos + run] == lf { lastNewline = pos + run + 1 }
                run += 1
            }
            if lastNewline >= 0 {  // `\s*[\r\n]+`
                pos = lastNewline
            } else if run > 1 && pos + run < end {  // `\s+(?!\S)`
                pos += run - 1
            } else if run > 0 {  // `\s+`
                pos += run
            } else {
                pos += 1
            }
            ends.append(pos)
        }
    }
}
