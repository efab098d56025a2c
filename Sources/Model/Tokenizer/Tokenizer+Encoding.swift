extension Tokenizer {
    /// The ids of `text`, without BOS unless `addBOS` is true and without EOS unless `addEOS` is (llama.cpp's
    /// `add_special` is `addBOS: tokenizer.addBOS, addEOS: tokenizer.addEOS`).
    ///
    /// With `parseSpecial`, control-token texts such as `<|im_start|>` become their ids; without, they
    /// are tokenized as plain text (user-defined tokens are matched either way, as llama.cpp does).
    public func encode(_ text: String, parseSpecial: Bool = false, addBOS: Bool = false, addEOS: Bool = false) -> [Int] {
        encode(text, specials: parseSpecial ? .everywhere : .nowhere, addBOS: addBOS, addEOS: addEOS)
    }

    /// The ids of formatted chat text: control tokens only where the template wrote them, so a message that
    /// contains `<|im_end|>` gives the ids of those characters as text (`PromptMarkers.text`). `.parsed`, kept for
    /// runs recorded before that rule, parses control tokens anywhere in the text, as `encode(_:parseSpecial: true)`.
    /// Where the message holds no control-token text both give the same ids: the text between control tokens is
    /// tokenized as one stretch either way.
    public func encode(_ chat: ChatText, markers: PromptMarkers = .text, addBOS: Bool = false) -> [Int] {
        switch markers {
        case .text: return encode(chat.text, specials: .within(chat.templateRanges), addBOS: addBOS, addEOS: false)
        case .parsed: return encode(chat.text, specials: .everywhere, addBOS: addBOS, addEOS: false)
        }
    }

    /// Where control and unknown tokens are matched in the text (user-defined ones are matched everywhere).
    enum SpecialParsing {
        case everywhere
        case nowhere
        /// Only a match lying wholly inside one of these UTF-8 byte ranges.
        case within([Range<Int>])
    }

    private func encode(_ text: String, specials: SpecialParsing, addBOS: Bool, addEOS: Bool) -> [Int] {
        var output: [Int32] = []
        if addBOS, let bos { output.append(Int32(bos)) }
        var utf8 = Array(text.utf8)
        utf8.withUnsafeMutableBufferPointer { bytes in
            let fragments = partition(UnsafeBufferPointer(bytes), specials: specials)
            if let sentencePiece {
                sentencePiece.encode(fragments, of: UnsafeBufferPointer(bytes), into: &output)
                return
            }
            guard let rule = preTokenizer else { return }
            var session = Session(tokenizer: self, rule: rule)
            for fragment in fragments {
                switch fragment {
                case let .special(id):
                    output.append(id)
                case let .text(range):
                    session.encode(UnsafeBufferPointer(rebasing: bytes[range]), into: &output)
                }
            }
        }
        if addEOS, let eos { output.append(Int32(eos)) }
        return output.map(Int.init)
    }

    enum Fragment: Equatable {
        case text(Range<Int>)
        case special(Int32)
    }

    /// Cuts special tokens out of the text: each special in turn (longest first) splits every text
    /// fragment left by the ones before it, as llama.cpp's `tokenizer_st_partition` does.
    /// Control and unknown tokens are matched only where `specials` allows; a match refused there stays part of
    /// the text around it.
    func partition(_ bytes: UnsafeBufferPointer<UInt8>, specials: SpecialParsing) -> [Fragment] {
        guard !bytes.isEmpty else { return [] }
        var fragments: [Fragment] = [.text(0..<bytes.count)]
        let allowed: [Range<Int>]?
        switch specials {
        case .everywhere: allowed = nil
        case .nowhere: allowed = []
        case let .within(ranges): allowed = ranges
        }
        for special in allowed == [] ? specialsAlways : specialsParsed {
            let needle = special.bytes
            let anywhere = allowed == nil || tokenTypes[Int(special.id)] == .userDefined
            let first = needle[0]
            var rebuilt: [Fragment] = []
            var changed = false
            for fragment in fragments {
                guard case let .text(range) = fragment, range.count >= needle.count else {
                    rebuilt.append(fragment)
                    continue
                }
                var start = range.lowerBound
                var index = range.lowerBound
                let last = range.upperBound - needle.count
                while index <= last {
                    if bytes[index] == first && matches(needle, bytes, at: index)
                        && (anywhere || allowed?.contains { $0.lowerBound <= index && index + needle.count <= $0.upperBound } == true) {
                        if start < index { rebuilt.append(.text(start..<index)) }
                        rebuilt.append(.special(special.id))
                        index += needle.count
                        if rightStripped.contains(special.id) {
                            // C's isspace: blank, \t, \n, \v, \f, \r.
                            while index < range.upperBound && (bytes[index] == 0x20 || (0x09...0x0D).contains(bytes[index])) { index += 1 }
                        }
                        start = index
                        changed = true
                    } else {
                        index += 1
                    }
                }
                if start < range.upperBound { rebuilt.append(.text(start..<range.upperBound)) }
            }
            if changed { fragments = rebuilt }
        }
        return fragments
    }

    private func matches(_ needle: [UInt8], _ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Bool {
        for offset in 1..<needle.count where bytes[index + offset] != needle[offset] { return false }
        return true
    }
}

/// The working buffers of one encode call.
struct Session {
    let tokenizer: Tokenizer
    let rule: PreTokenizer
    var merger: BytePairMerger
    var scalars: [UInt32] = []
    var classes: [UInt8] = []
    var offsets: [Int] = []   // byte offset of each scalar, plus the end
    var ends: [Int] = []
    var symbols: [Int32] = []
    var merged: [Int32] = []

    init(tokenizer: Tokenizer, rule: PreTokenizer) {
        self.tokenizer = tokenizer
        self.rule = rule
        self.merger = tokenizer.merger
    }

    /// Pre-tokenizes and merges one stretch of text free of special tokens (valid UTF-8).
    mutating func encode(_ bytes: UnsafeBufferPointer<UInt8>, into output: inout [Int32]) {
        scalars.removeAll(keepingCapacity: true)
        classes.removeAll(keepingCapacity: true)
        offsets.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
        decodeScalars(bytes)
        scalars.withUnsafeBufferPointer { s in
            classes.withUnsafeBufferPointer { k in
                rule.split(s, k, 0..<s.count, into: &ends)
            }
        }
        var start = 0
        for end in ends {
            let word = UnsafeBufferPointer(rebasing: bytes[offsets[start]..<offsets[end]])
            encodeWord(word, into: &output)
            start = end
        }
    }

    private mutating func decodeScalars(_ bytes: UnsafeBufferPointer<UInt8>) {
        let n = bytes.count
        scalars.reserveCapacity(n)
        classes.reserveCapacity(n)
        offsets.reserveCapacity(n + 1)
        ScalarClassTable.basic.withUnsafeBufferPointer { table in
            var i = 0
            while i < n {
                let b0 = UInt32(bytes[i])
                var value: UInt32
                var length: Int
                if b0 < 0x80 {
                    value = b0; length = 1
                } else if b0 < 0xE0 {
                    value = (b0 & 0x1F) << 6 | UInt32(bytes[i + 1] & 0x3F); length = 2
                } else if b0 < 0xF0 {
                    value = (b0 & 0x0F) << 12 | UInt32(bytes[i + 1] & 0x3F) << 6 | UInt32(bytes[i + 2] & 0x3F); length = 3
                } else {
                    value = (b0 & 0x07) << 18 | UInt32(bytes[i + 1] & 0x3F) << 12 | UInt32(bytes[i + 2] & 0x3F) << 6
                        | UInt32(bytes[i + 3] & 0x3F)
                    length = 4
                }
                scalars.append(value)
                classes.append(value < 0x10000 ? table[Int(value)].rawValue : ScalarClass.compute(value).rawValue)
                offsets.append(i)
                i += length
            }
        }
        offsets.append(n)
    }

    private mutating func encodeWord(_ word: UnsafeBufferPointer<UInt8>, into output: inout [Int32]) {
        if rule.ignoresMerges, let id = tokenizer.ids[ByteLevel.encode(word)] {
            output.append(id)
            return
        }
        symbols.removeAll(keepingCapacity: true)
        for byte in word { symbols.append(tokenizer.byteSymbols[Int(byte)]) }
        merged.removeAll(keepingCapacity: true)
        symbols.withUnsafeBufferPointer { merger.merge($0, into: &merged) }
        let vocabulary = Int32(tokenizer.count)
        for id in merged {
            if id < vocabulary {
                output.append(id)
            } else {
                // Not a token: fall back to the one-byte tokens of its text, skipping what has none
                // (llama.cpp looks each byte of the symbol's text up on its own).
                for scalar in tokenizer.syntheticTexts[Int(id - vocabulary)].unicodeScalars where scalar.isASCII {
                    if let single = tokenizer.ids[String(scalar)] { output.append(single) }
                }
            }
        }
    }
}
