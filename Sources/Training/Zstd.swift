import CZstd
import Foundation

/// zstd compression of checkpoints (their payload is one frame); the only code that calls libzstd, so Training
/// is the only module that links it.
public enum Zstd {
    public static func compress(_ data: Data, level: Int32 = 3) throws -> Data {
        let bound = ZSTD_compressBound(data.count)
        var out = Data(count: bound)
        let written = out.withUnsafeMutableBytes { dst in
            data.withUnsafeBytes { src in
                ZSTD_compress(dst.baseAddress, bound, src.baseAddress, src.count, level)
            }
        }
        if ZSTD_isError(written) != 0 {
            throw TrainingError.io("zstd: \(String(cString: ZSTD_getErrorName(written)))")
        }
        out.count = written
        return out
    }

    /// Decompresses one frame. `limit` bounds the output so a corrupt header cannot demand gigabytes.
    public static func decompress(_ data: Data, limit: Int = 1 << 32) throws -> Data {
        let declared = data.withUnsafeBytes { ZSTD_getFrameContentSize($0.baseAddress, $0.count) }
        // ZSTD_CONTENTSIZE_ERROR and ZSTD_CONTENTSIZE_UNKNOWN are the two largest UInt64 values.
        guard declared < UInt64.max - 1 else {
            throw TrainingError.io("zstd: not a zstd frame with a known size")
        }
        guard declared <= UInt64(limit) else {
            throw TrainingError.io("zstd: frame declares \(declared) bytes, more than the \(limit) allowed")
        }
        let size = Int(declared)
        var out = Data(count: size)
        let produced = out.withUnsafeMutableBytes { dst in
            data.withUnsafeBytes { src in
                ZSTD_decompress(dst.baseAddress, size, src.baseAddress, src.count)
            }
        }
        if ZSTD_isError(produced) != 0 {
            throw TrainingError.io("zstd: \(String(cString: ZSTD_getErrorName(produced)))")
        }
        guard produced == size else {
            throw TrainingError.io("zstd: frame decoded to \(produced) bytes, header said \(size)")
        }
        return out
    }
}
