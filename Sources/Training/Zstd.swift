import CZstd
import Foundation

/// zstd compression of checkpoints and run bundles (each payload is one frame); the only code that calls libzstd,
/// so Training is the only module that links it.
public enum Zstd {
    /// The most a frame can decompress to per compressed byte before it is taken for a bomb. The engine's frames
    /// hold f32 tensors and JSON with base64 blobs, which zstd shrinks a few times at most; only degenerate input
    /// such as long runs of one byte goes past a thousand times, and that is how a bomb is made.
    public static let largestRatio = 1000
    /// Below this many decompressed bytes the ratio is not checked: a small frame costs little whatever it holds.
    public static let sizeAlwaysAllowed = 64 << 20

    /// The most `compressedBytes` of a frame may decompress to: `largestRatio` times, or `sizeAlwaysAllowed`.
    public static func largestPlausibleSize(compressedBytes: Int) -> Int {
        let (scaled, overflow) = compressedBytes.multipliedReportingOverflow(by: largestRatio)
        return max(sizeAlwaysAllowed, overflow ? Int.max : scaled)
    }

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

    /// Decompresses `data` (one frame, or frames one after another), refusing as soon as the output would pass
    /// `limit` or `largestPlausibleSize`: a size the frame declares is checked before anything is decoded, and the
    /// output is decoded in pieces, so a frame that declares nothing or lies holds at most the limit in memory.
    public static func decompress(_ data: Data, limit: Int = 1 << 32) throws(ZstdError) -> Data {
        let allowed = min(limit, largestPlausibleSize(compressedBytes: data.count))
        let declared = data.withUnsafeBytes { ZSTD_getFrameContentSize($0.baseAddress, $0.count) }
        // ZSTD_CONTENTSIZE_UNKNOWN is the largest UInt64, ZSTD_CONTENTSIZE_ERROR the one below it.
        guard declared != UInt64.max - 1 else { throw .notAFrame }
        let known = declared < UInt64.max - 1
        if known, declared > UInt64(allowed) { throw .pastLimit(limit: allowed, declared: declared) }
        guard let context = ZSTD_createDCtx() else { throw .damaged("libzstd could not make a decompression context") }
        defer { ZSTD_freeDCtx(context) }

        var out = Data()
        if known { out.reserveCapacity(Int(declared)) }
        let pieceSize = ZSTD_DStreamOutSize()
        var piece = [UInt8](repeating: 0, count: pieceSize)
        // withUnsafeBytes rethrows untyped errors, so the loop hands its refusal out as a value.
        let refusal: ZstdError? = data.withUnsafeBytes { source in
            var input = ZSTD_inBuffer(src: source.baseAddress, size: source.count, pos: 0)
            while true {
                let (status, produced) = piece.withUnsafeMutableBytes { target in
                    var output = ZSTD_outBuffer(dst: target.baseAddress, size: target.count, pos: 0)
                    let status = ZSTD_decompressStream(context, &output, &input)
                    return (status, output.pos)
                }
                if ZSTD_isError(status) != 0 { return .damaged(String(cString: ZSTD_getErrorName(status))) }
                guard produced <= allowed - out.count else { return .pastLimit(limit: allowed, declared: known ? declared : nil) }
                out.append(contentsOf: piece[0..<produced])
                let consumedAll = input.pos == input.size
                // 0: the frame is decoded and flushed whole. Otherwise a piece that was not filled means zstd waits
                // for input there is no more of.
                if status == 0, consumedAll { return nil }
                if consumedAll, produced < pieceSize { return .truncated }
            }
        }
        if let refusal { throw refusal }
        return out
    }
}

/// Why bytes did not decompress. Descriptions name the problem; the caller names the file and the way out.
public enum ZstdError: Error, Equatable, CustomStringConvertible {
    /// The bytes do not start with a zstd frame header.
    case notAFrame
    /// The frame ends before its data does.
    case truncated
    /// libzstd refused a block (its error name).
    case damaged(String)
    /// The frame declares, or decodes to, more than the caller allows (`declared` when the header gave a size).
    case pastLimit(limit: Int, declared: UInt64?)

    public var description: String {
        switch self {
        case .notAFrame: return "zstd: not a zstd frame"
        case .truncated: return "zstd: the frame is cut short"
        case let .damaged(reason): return "zstd: \(reason)"
        case let .pastLimit(limit, declared?): return "zstd: the frame declares \(declared) bytes, more than the \(limit) allowed"
        case let .pastLimit(limit, nil): return "zstd: the frame decodes to more than the \(limit) bytes allowed"
        }
    }
}
