#if arch(x86_64)
import QuantizedKernels
import QuantizedKernelsAVX512

/// A prompt's activations rounded to 8 bits, laid out for `TileProducts` (`TokenTiles`): each token's row
/// rounded by `QuantizedMatVec.quantize`, decode's own rounding, so a prompt reads the values a decoded token
/// would. Tokens past the last, up to a whole tile of eight, are zero: bytes 128 (x̂ = 0), steps and sums 0.
/// The owner calls `deallocate`.
struct PromptActivations {
    let tiles: TokenTiles
    private let words: UnsafeMutablePointer<UInt32>
    private let floats: UnsafeMutablePointer<Float>

    init(_ x: UnsafePointer<Float>, tokens: Int, columns: Int) {
        let lanes = TileProducts.tokens
        let tileCount = (tokens + lanes - 1) / lanes
        let groups = columns / 32
        let (tileWords, tileFloats) = (columns / 4 * lanes, columns / 16 * lanes)
        words = .allocate(capacity: tileCount * tileWords)
        words.initialize(repeating: 0x8080_8080, count: tileCount * tileWords)
        let arrays = 5, perArray = tileCount * tileFloats
        floats = .allocate(capacity: arrays * perArray)
        floats.initialize(repeating: 0, count: arrays * perArray)
        let (steps32, steps16, sums32, roundedSums32, sums16) =
            (floats, floats + perArray, floats + 2 * perArray, floats + 3 * perArray, floats + 4 * perArray)
        tiles = TokenTiles(bytes: words, steps32: steps32, steps16: steps16, sums32: sums32, roundedSums32: roundedSums32, sums16: sums16,
                           columns: columns)

        let values = UnsafeMutableRawPointer.allocate(byteCount: QuantizedActivations.groupBytes * groups, alignment: 64)
        let steps = UnsafeMutablePointer<Float>.allocate(capacity: groups)
        let roundedSums = UnsafeMutablePointer<Float>.allocate(capacity: groups)
        let halfSums = UnsafeMutablePointer<Int32>.allocate(capacity: 2 * groups)
        let bytes = UnsafeMutablePointer<Int8>.allocate(capacity: columns)
        defer { values.deallocate(); steps.deallocate(); roundedSums.deallocate(); halfSums.deallocate(); bytes.deallocate() }
        for token in 0..<tokens {
            QuantizedMatVec.quantize(x + token * columns, groups: groups, values: values, scales: steps, halfSums: halfSums,
                                     sums: roundedSums, bytes: bytes)
            let (tile, lane) = token.quotientAndRemainder(dividingBy: lanes)
            let w = words + tile * tileWords + lane
            UnsafeRawPointer(bytes).withMemoryRebound(to: UInt32.self, capacity: columns / 4) { quads in
                // + 128 in every byte: the activations are `vpdpbusd`'s unsigned operand.
                for q in 0..<(columns / 4) { w[q * lanes] = quads[q] ^ 0x8080_8080 }
            }
            let f = tile * tileFloats + lane
            for g in 0..<groups {
                let step = steps[g]
                let (low, high) = (halfSums[2 * g], halfSums[2 * g + 1])
                steps32[f + g * lanes] = step
                sums32[f + g * lanes] = step * Float(low + high)
                roundedSums32[f + g * lanes] = roundedSums[g]
                steps16[f + 2 * g * lanes] = step
                steps16[f + (2 * g + 1) * lanes] = step
                sums16[f + 2 * g * lanes] = step * Float(low)
                sums16[f + (2 * g + 1) * lanes] = step * Float(high)
            }
        }
    }

    func deallocate() {
        words.deallocate()
        floats.deallocate()
    }
}
#endif
