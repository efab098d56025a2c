/// GPT-2's reversible mapping between bytes and printable Unicode characters.
///
/// Byte-level BPE vocabularies store every token as text in which each byte is one character:
/// the printable Latin-1 bytes `!`…`~`, `¡`…`¬` and `®`…`ÿ` stand for themselves, and the other 68
/// bytes (controls, space, DEL, NBSP, soft hyphen) take U+0100 onwards in byte order. This is the
/// table of OpenAI's `bytes_to_unicode` and of llama.cpp's `unicode_byte_to_utf8_map`.
enum ByteLevel {
    /// The character (as a scalar value) that stands for each byte.
    static let scalarForByte: [UInt32] = {
        var table = [UInt32](repeating: 0, count: 256)
        var next: UInt32 = 256
        for byte in 0..<256 {
            if isPrintable(byte) {
                table[byte] = UInt32(byte)
            } else {
                table[byte] = next
                next += 1
            }
        }
        return table
    }()

    /// The inverse of `scalarForByte`, indexed by scalar value below 324; -1 where no byte maps.
    static let byteForScalar: [Int16] = {
        var table = [Int16](repeating: -1, count: 324)
        for (byte, scalar) in scalarForByte.enumerated() { table[Int(scalar)] = Int16(byte) }
        return table
    }()

    private static func isPrintable(_ byte: Int) -> Bool {
        (0x21...0x7E).contains(byte) || (0xA1...0xAC).contains(byte) || (0xAE...0xFF).contains(byte)
    }

    /// The vocabulary text of a byte string: one character per byte.
    static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var result = String.UnicodeScalarView()
        for byte in bytes { result.append(Unicode.Scalar(scalarForByte[Int(byte)])!) }
        return String(result)
    }

    /// The bytes a vocabulary text stands for, or nil if a character is outside the mapping.
    static func decode(_ text: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            let value = Int(scalar.value)
            guard value < byteForScalar.count, byteForScalar[value] >= 0 else { return nil }
            bytes.append(UInt8(byteForScalar[value]))
        }
        return bytes
    }
}
