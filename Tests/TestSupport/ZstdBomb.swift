import Foundation

/// A zstd frame of RLE blocks: four bytes of input for each 128 KiB of output, the shape of a decompression bomb.
/// Written byte by byte from the format (RFC 8878) so a test holds a bomb without ever making its output.
public enum ZstdBomb {
    public static let blockSize = 1 << 17

    /// `blocks` blocks of `blockSize` copies of one byte; the header declares the decompressed size when `declared`
    /// is given (it may lie), else gives none.
    public static func frame(blocks: Int, declared: UInt64? = nil) -> Data {
        var frame = Data([0x28, 0xB5, 0x2F, 0xFD])  // the magic number, little-endian
        // Frame header descriptor: bits 7-6 give an 8-byte content size (3) or none (0); no single segment, no
        // checksum, no dictionary. Then the window descriptor: exponent 7, 2^(10+7) = 128 KiB.
        frame.append(declared == nil ? 0x00 : 0xC0)
        frame.append(0x38)
        if let declared { withUnsafeBytes(of: declared.littleEndian) { frame.append(contentsOf: $0) } }
        for index in 0..<blocks {
            // Block header, 3 bytes little-endian: bit 0 last block, bits 1-2 type (1: RLE), bits 3-23 the size.
            let header = UInt32(blockSize) << 3 | 1 << 1 | (index == blocks - 1 ? 1 : 0)
            frame.append(contentsOf: [UInt8(header & 0xFF), UInt8(header >> 8 & 0xFF), UInt8(header >> 16 & 0xFF), UInt8(ascii: "A")])
        }
        return frame
    }

    /// The decompressed size of `frame(blocks:)`.
    public static func output(blocks: Int) -> UInt64 { UInt64(blocks) * UInt64(blockSize) }
}
