/// Byte classes the scanners share; they read UTF-8 and treat every non-ASCII byte as "other".
enum ASCII {
    static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
    static func isUpper(_ b: UInt8) -> Bool { b >= 0x41 && b <= 0x5A }
    static func isLower(_ b: UInt8) -> Bool { b >= 0x61 && b <= 0x7A }
    static func isLetter(_ b: UInt8) -> Bool { isUpper(b) || isLower(b) }
    static func isAlnum(_ b: UInt8) -> Bool { isDigit(b) || isLetter(b) }
    /// A letter, digit, underscore or any byte of a non-ASCII character: something a number cannot touch.
    static func isWordByte(_ b: UInt8) -> Bool { isAlnum(b) || b == 0x5F || b >= 0x80 }
    static func lower(_ b: UInt8) -> UInt8 { isUpper(b) ? b + 0x20 : b }
    static func digitValue(_ b: UInt8) -> Int { Int(b) - 0x30 }

    /// True when `bytes[index]` exists and satisfies `test`.
    static func at(_ bytes: [UInt8], _ index: Int, _ test: (UInt8) -> Bool) -> Bool {
        index >= 0 && index < bytes.count && test(bytes[index])
    }

    /// True when a number may start at `index`: not glued to a word, and not the tail of a decimal, time or
    /// date (`3.14`, `12:30`, `2024-01`) whose earlier part was already looked at.
    static func numberMayStart(_ bytes: [UInt8], at index: Int) -> Bool {
        guard index > 0 else { return true }
        let previous = bytes[index - 1]
        if isWordByte(previous) { return false }
        if [UInt8(ascii: "."), UInt8(ascii: ","), UInt8(ascii: ":"), UInt8(ascii: "/"), UInt8(ascii: "-")].contains(previous),
           at(bytes, index - 2, isDigit) {
            return false
        }
        return true
    }

    /// True when a number may end at `index` (exclusive): not glued to a word and not followed by a decimal part.
    static func numberMayEnd(_ bytes: [UInt8], at index: Int) -> Bool {
        guard index < bytes.count else { return true }
        let next = bytes[index]
        if isWordByte(next) { return false }
        if (next == UInt8(ascii: ".") || next == UInt8(ascii: ",")) && at(bytes, index + 1, isDigit) { return false }
        return true
    }

    /// True when one of `words` (lower-case ASCII or UTF-8) ends within `window` bytes before `index`, as a
    /// whole word (`tel` in "Tel." but not in "televisie"). A word ending in `*` is a stem: any ending goes.
    static func cue(_ words: [[UInt8]], before index: Int, in bytes: [UInt8], window: Int) -> Bool {
        let start = max(0, index - window)
        guard start < index else { return false }
        let lowered = bytes[start..<index].map(lower)
        for pattern in words {
            let stem = pattern.last == UInt8(ascii: "*")
            let word = stem ? Array(pattern.dropLast()) : pattern
            guard word.count <= lowered.count else { continue }
            var position = 0
            while position + word.count <= lowered.count {
                if lowered[position..<(position + word.count)].elementsEqual(word) {
                    let absolute = start + position
                    let after = absolute + word.count
                    let opens = absolute == 0 || !isWordByte(bytes[absolute - 1])
                    let closes = stem || after >= bytes.count || !isWordByte(bytes[after])
                    if opens && closes { return true }
                }
                position += 1
            }
        }
        return false
    }
}
