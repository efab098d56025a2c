import QuantizedKernels
import QuantizedKernelsAVX2
#if arch(x86_64)
import QuantizedKernelsAVX512
#endif

/// A prompt's activations rounded to 8 bits, laid out for the tile products (`TokenTiles`, the same layout in
/// every implementation): each token's row rounded as `QuantizedMatVec.quantize` rounds it (`TokenTileRounding`
/// or `TileKernels.round`, which give the same bytes and floats), so a prompt reads the values a decoded token
/// would. Tokens past the last, up to a whole tile of eight, are zero: bytes 128 (x̂ = 0), steps and sums 0.
/// The owner calls `deallocate`.
struct PromptActivations: @unchecked Sendable {
    let columns: Int
    private let words: UnsafeMutablePointer<UInt32>
    private let floats: UnsafeMutablePointer<Float>
    /// Floats of each of the five arrays (steps32, steps16, sums32, roundedSums32, sums16), one after the other.
    private let perArray: Int

    /// Rounds the `tokens` rows of x (tokens, columns), a tile of eight tokens per task of `workers`.
    init(_ x: UnsafePointer<Float>, tokens: Int, columns: Int, workers: Int = 1, path: QuantizedMatMul.Path = QuantizedMatMul.path ?? .portable) {
        self.init(x, tokens: tokens, columns: columns, path: path) { DecodeTeam.forEachTask($0, members: workers, $1) }
    }

    /// Rounds the `tokens` rows of x (tokens, columns), a tile of eight tokens per task of `forEachTask`, with
    /// `path`'s rounding.
    init(_ x: UnsafePointer<Float>, tokens: Int, columns: Int, path: QuantizedMatMul.Path, forEachTask: QuantizedMatMul.TaskRunner) {
        let lanes = QuantizedKernels.TileKernels.tokens
        let tileCount = (tokens + lanes - 1) / lanes
        let (tileWords, tileFloats) = (columns / 4 * lanes, columns / 16 * lanes)
        self.columns = columns
        // Every lane of a token is written by the rounding; only the last tile's padding is set here.
        let last = tileCount - 1
        words = .allocate(capacity: tileCount * tileWords)
        (words + last * tileWords).initialize(repeating: 0x8080_8080, count: tileWords)
        let arrays = 5
        perArray = tileCount * tileFloats
        floats = .allocate(capacity: arrays * perArray)
        for array in 0..<arrays { (floats + array * perArray + last * tileFloats).initialize(repeating: 0, count: tileFloats) }
        let this = self
        forEachTask(tileCount) { tile in
            for token in (tile * lanes)..<min(tokens, (tile + 1) * lanes) {
                let row = x + token * columns
                switch path {
                case .avx512vnni:
                    #if arch(x86_64)
                    TokenTileRounding.round(row, token: token, into: this.vnni)
                    #else
                    preconditionFailure("no AVX-512 kernels on this architecture")
                    #endif
                case .avx2: QuantizedKernelsAVX2.TileKernels.round(row, token: token, into: this.avx2)
                case .portable: QuantizedKernels.TileKernels.round(row, token: token, into: this.portable)
                }
            }
        }
    }

    private var arrays: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>,
                         UnsafeMutablePointer<Float>) {
        (floats, floats + perArray, floats + 2 * perArray, floats + 3 * perArray, floats + 4 * perArray)
    }

    /// The buffers as the portable compilation reads them.
    var portable: QuantizedKernels.TileKernels.Activations {
        let (steps32, steps16, sums32, roundedSums32, sums16) = arrays
        return .init(bytes: words, steps32: steps32, steps16: steps16, sums32: sums32, roundedSums32: roundedSums32, sums16: sums16, columns: columns)
    }

    /// The buffers as the AVX2 compilation reads them.
    var avx2: QuantizedKernelsAVX2.TileKernels.Activations {
        let (steps32, steps16, sums32, roundedSums32, sums16) = arrays
        return .init(bytes: words, steps32: steps32, steps16: steps16, sums32: sums32, roundedSums32: roundedSums32, sums16: sums16, columns: columns)
    }

    #if arch(x86_64)
    /// The buffers as the AVX-512 kernels read them.
    var vnni: TokenTiles {
        let (steps32, steps16, sums32, roundedSums32, sums16) = arrays
        return TokenTiles(bytes: words, steps32: steps32, steps16: steps16, sums32: sums32, roundedSums32: roundedSums32, sums16: sums16,
                          columns: columns)
    }
    #endif

    /// The buffers as `TokenTiles`-shaped fields (the portable view: every implementation's layout is the same).
    var tiles: QuantizedKernels.TileKernels.Activations { portable }

    func deallocate() {
        words.deallocate()
        floats.deallocate()
    }
}
