import QuantizedKernels
import QuantizedKernelsAVX2

/// Quantized blocks to f32 for the batched passes, which dequantize every matrix they read into a workspace
/// before sgemm: the vectorized `QuantizedRows.dequantize` of the compilation `QuantizedMatVec.path` names
/// where it covers the type, else `Dequantize.convert`. Both give the same bits (`Dequantize` is the oracle of
/// the tests), so the choice never changes a result.
enum BlockDequantizer {
    static func supports(_ type: GGMLType) -> Bool { QuantizedKernels.QuantizedRows.dequantizedTypes.contains(type.rawValue) }

    /// Writes `count` values into `out`; `source` must hold `count / blockSize` blocks.
    static func convert(_ source: UnsafeRawBufferPointer, type: GGMLType, count: Int, into out: UnsafeMutablePointer<Float>,
                        path: QuantizedMatVec.Path = QuantizedMatVec.path) {
        guard supports(type), count > 0, let blocks = source.baseAddress else {
            return Dequantize.convert(source, type: type, count: count, into: out)
        }
        precondition(count % type.blockSize == 0 && source.count >= count / type.blockSize * type.blockBytes,
                     "source too small for \(count) \(type.name) values")
        switch path {
        case .avx512vnni, .avx2: QuantizedKernelsAVX2.QuantizedRows.dequantize(type: type.rawValue, blocks: blocks, count: count, into: out)
        case .portable: QuantizedKernels.QuantizedRows.dequantize(type: type.rawValue, blocks: blocks, count: count, into: out)
        }
    }
}
