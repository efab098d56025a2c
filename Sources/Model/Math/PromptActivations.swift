#if arch(x86_64)
import QuantizedKernelsAVX512

/// A prompt's activations rounded to 8 bits, laid out for `TileProducts` (`TokenTiles`): each token's row
/// rounded as `QuantizedMatVec.quantize` rounds it (`TokenTileRounding`), so a prompt reads the values a decoded
/// token would. Tokens past the last, up to a whole tile of eight, are zero: bytes 128 (x̂ = 0), steps and sums 0.
/// The owner calls `deallocate`.
struct PromptActivations {
    let tiles: TokenTiles
    private let words: UnsafeMutablePointer<UInt32>
    private let floats: UnsafeMutablePointer<Float>

    /// Rounds the `tokens` rows of x (tokens, columns), a tile of eight tokens per task of `workers`.
    init(_ x: UnsafePointer<Float>, tokens: Int, columns: Int, workers: Int = 1) {
        self.init(x, tokens: tokens, columns: columns) { DecodeTeam.forEachTask($0, members: workers, $1) }
    }

    /// Rounds the `tokens` rows of x (tokens, columns), a tile of eight tokens per task of `forEachTask`.
    init(_ x: UnsafePointer<Float>, tokens: Int, columns: Int, forEachTask: QuantizedMatMul.TaskRunner) {
        let lanes = TileProducts.tokens
        let tileCount = (tokens + lanes - 1) / lanes
        let (tileWords, tileFloats) = (columns / 4 * lanes, columns / 16 * lanes)
        // Every lane of a token is written by `round`; only the last tile's padding is set here.
        let last = tileCount - 1
        words = .allocate(capacity: tileCount * tileWords)
        (words + last * tileWords).initialize(repeating: 0x8080_8080, count: tileWords)
        let arrays = 5, perArray = tileCount * tileFloats
        floats = .allocate(capacity: arrays * perArray)
        for array in 0..<arrays { (floats + array * perArray + last * tileFloats).initialize(repeating: 0, count: tileFloats) }
        let (steps32, steps16, sums32, roundedSums32, sums16) =
            (floats, floats + perArray, floats + 2 * perArray, floats + 3 * perArray, floats + 4 * perArray)
        tiles = TokenTiles(bytes: words, steps32: steps32, steps16: steps16, sums32: sums32, roundedSums32: roundedSums32, sums16: sums16,
                           columns: columns)
        let tiles = self.tiles
        forEachTask(tileCount) { tile in
            for token in (tile * lanes)..<min(tokens, (tile + 1) * lanes) {
                TokenTileRounding.round(x + token * columns, token: token, into: tiles)
            }
        }
    }

    func deallocate() {
        words.deallocate()
        floats.deallocate()
    }
}
#endif
