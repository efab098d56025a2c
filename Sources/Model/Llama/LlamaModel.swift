import Foundation
import AdaptCore

// Dimension legend (llama family; figures for SmolLM2-135M):
//   V  vocabulary size (49152)          C  width, embedding_length (576)
//   L  block count (30)                 F  feed-forward width (1536)
//   H  query heads (9)                  G  key/value heads (3); query head h reads kv head h / (H / G)
//   D  head dimension, C / H unless the file declares attention.key_length (64)        R  rotated dimensions per head, rope.dimension_count (64)
//   Cq = H·D (576)                      Ckv = G·D (192)
//   T  tokens in this pass              P  tokens already in the KV cache      S = P + T
// Every weight W of a linear map is read as (out, in) row-major — GGUF stores it with
// dimensions [in, out], ne[0] fastest, which is the same memory order — so y (T, out) = x (T, in) · Wᵀ.

/// A llama-family transformer in f32 on OpenBLAS, its matrices dequantized once at load or tile by tile as
/// passes need them (`BaseWeightStorage`).
///
/// Immutable after `init` (but for a spare set of training buffers under a mutex), so one instance can serve
/// many threads.
public final class LlamaModel: Sendable {
    public struct Hyperparameters: Sendable, Equatable, Codable {
        public var architecture: Architecture
        public var vocabularySize: Int   // V
        public var contextLength: Int
        public var width: Int            // C
        public var blockCount: Int       // L
        public var ffnWidth: Int         // F
        public var headCount: Int        // H
        public var kvHeadCount: Int      // G
        public var headDimension: Int    // D
        public var ropeDimensions: Int   // R
        public var ropeBase: Float
        /// Multiplies every rotary angle: 1, or 1/factor under linear `rope.scaling`.
        public var ropeScale: Float
        /// Positions a sliding-window block sees, itself included (`attention.sliding_window`); nil: no such blocks.
        public var slidingWindow: Int?
        /// The factor on q·k: 1/√D (Gemma 3 27B: 1/√(C/H), as llama.cpp sets it).
        public var attentionScale: Float
        public var rmsEpsilon: Float

        public var queryWidth: Int { headCount * headDimension }      // Cq

        /// Whether block `b` attends within `slidingWindow` only (with RoPE of `architecture.slidingWindowRopeBase`).
        public func isSlidingWindow(block b: Int) -> Bool { slidingWindow != nil && architecture.isSlidingWindow(block: b) }
        public var keyValueWidth: Int { kvHeadCount * headDimension } // Ckv

        /// (out, in) of a projection's weight.
        public func shape(of projection: Projection) -> (output: Int, input: Int) {
            switch projection {
            case .q: return (queryWidth, width)
            case .k, .v: return (keyValueWidth, width)
            case .o: return (width, queryWidth)
            case .gate, .up: return (ffnWidth, width)
            case .down: return (width, ffnWidth)
            case .qkv: return (queryWidth + 2 * keyValueWidth, width)
            case .gateUp: return (2 * ffnWidth, width)
            }
        }

        /// Reads `<arch>.*` keys (llama.cpp's LLM_KV names) and checks that they fit together.
        public init(file: GGUFFile) throws {
            guard let name = file.string("general.architecture") else {
                throw ModelError.missingMetadata(key: "general.architecture")
            }
            architecture = try Architecture.named(name)
            let prefix = name + "."
            func int(_ key: String) throws -> Int {
                guard let v = file.int(prefix + key) else { throw ModelError.missingMetadata(key: prefix + key) }
                return v
            }
            width = try int("embedding_length")
            blockCount = try int("block_count")
            ffnWidth = try int("feed_forward_length")
            headCount = try int("attention.head_count")
            kvHeadCount = file.int(prefix + "attention.head_count_kv") ?? headCount
            contextLength = try int("context_length")
            guard width > 0, blockCount > 0, ffnWidth > 0, headCount > 0, kvHeadCount > 0, contextLength > 0 else {
                throw ModelError.invalidHyperparameters(reason: "sizes must be positive")
            }
            // Qwen3 and Gemma 3 declare the head size; elsewhere it is the width shared by the heads.
            if let keyLength = file.int(prefix + "attention.key_length") {
                let valueLength = file.int(prefix + "attention.value_length") ?? keyLength
                guard keyLength > 0, valueLength == keyLength else {
                    throw ModelError.invalidHyperparameters(reason: "attention.key_length \(keyLength) and value_length \(valueLength) must be equal and positive")
                }
                headDimension = keyLength
            } else {
                guard width % headCount == 0 else {
                    throw ModelError.invalidHyperparameters(reason: "width \(width) is not a multiple of the \(headCount) heads")
                }
                headDimension = width / headCount
            }
            guard headCount % kvHeadCount == 0 else {
                throw ModelError.invalidHyperparameters(reason: "\(headCount) query heads do not share \(kvHeadCount) key/value heads evenly")
            }
            ropeDimensions = file.int(prefix + "rope.dimension_count") ?? headDimension
            guard ropeDimensions > 0, ropeDimensions <= headDimension, ropeDimensions % 2 == 0 else {
                throw ModelError.invalidHyperparameters(reason: "rope.dimension_count \(ropeDimensions) must be even and at most the head dimension \(headDimension)")
            }
            // RoPE divides by powers of the base and RMSNorm by √(mean + ε): a base or an ε that is not a
            // positive finite f32 turns every logit into NaN while the run still exits 0.
            func positive(_ key: String, default value: Double) throws -> Float {
                let stored = file.double(key) ?? value
                let single = Float(stored)
                guard single.isFinite, single > 0 else { throw ModelError.invalidMetadataValue(key: key, value: stored) }
                return single
            }
            ropeBase = try positive(prefix + "rope.freq_base", default: 10000)
            rmsEpsilon = try positive(prefix + "attention.layer_norm_rms_epsilon", default: 1e-5)
            // Linear position interpolation divides every angle by the factor (ggml's freq_scale = 1/factor);
            // YaRN and the other schemes change the angles in ways this pass does not implement.
            switch file.string(prefix + "rope.scaling.type") ?? "none" {
            case "none":
                ropeScale = 1
            case "linear":
                ropeScale = 1 / (try positive(prefix + "rope.scaling.factor", default: 1))
            case let other:
                throw ModelError.invalidHyperparameters(reason: "rope.scaling.type \(other) is not supported (none and linear are)")
            }
            if let capping = file.double(prefix + "final_logit_softcapping"), capping != 0 {
                throw ModelError.invalidHyperparameters(reason: "final_logit_softcapping \(capping) is not supported")
            }
            slidingWindow = nil
            if architecture.slidingWindowPattern != nil, let window = file.int(prefix + "attention.sliding_window"), window > 0 {
                slidingWindow = window
            }
            attentionScale = 1 / Float(headDimension).squareRoot()
            if name == "gemma3" && blockCount == 62 { attentionScale = 1 / Float(width / headCount).squareRoot() }
            guard let embedding = file.tensor(named: "token_embd.weight"), embedding.dimensions.count == 2 else {
                throw ModelError.missingTensor(name: "token_embd.weight")
            }
            // Every token id the tokenizer can produce indexes a row of the embedding (and of the output
            // matrix); a tokenizer larger than the embedding would send a pass past its end, so the counts
            // must agree before anything runs.
            let embeddingRows = embedding.dimensions[1]
            if let declared = file.int(prefix + "vocab_size"), declared != embeddingRows {
                throw ModelError.vocabularyMismatch(key: prefix + "vocab_size", count: declared, embeddingRows: embeddingRows)
            }
            if let tokens = file.metadata["tokenizer.ggml.tokens"]?.arrayValue, tokens.count != embeddingRows {
                throw ModelError.vocabularyMismatch(key: "tokenizer.ggml.tokens", count: tokens.count, embeddingRows: embeddingRows)
            }
            vocabularySize = embeddingRows
        }
    }

    /// Where each weight of a block sits: vectors in `weights` (offsets in floats), matrices as `BaseMatrix`.
    struct BlockLayout: Sendable {
        var attentionNorm = 0, ffnNorm = 0
        /// Biases of q, k, v (`Architecture.projectionBiases`), per-head norms of q and k (`queryKeyNorm`).
        var qBias: Int?, kBias: Int?, vBias: Int?, qNorm: Int?, kNorm: Int?
        /// Norms of the attention and feed-forward outputs (`Architecture.postNorms`).
        var attentionPostNorm: Int?, ffnPostNorm: Int?
        var matrices: [Projection: BaseMatrix] = [:]

        func bias(of projection: Projection) -> Int? {
            switch projection {
            case .q: return qBias
            case .k: return kBias
            case .v: return vBias
            default: return nil
            }
        }

        func matrix(_ projection: Projection) -> BaseMatrix { matrices[projection]! }
    }

    public let hyperparameters: Hyperparameters
    /// Whether the output projection is the token embedding (no `output.weight` in the file).
    public let tiedOutput: Bool
    /// How the frozen matrices are kept (`BaseWeightStorage`).
    public let baseStorage: BaseWeightStorage
    /// Whether passes of several tokens read the projections and the output straight from the blocks with the
    /// integer tile kernels (`ForwardProducts.int8` where this CPU runs them).
    let forwardFromBlocks: Bool
    /// The forward kernels a run of this model records (`ForwardProducts.kernelName`).
    public let forwardKernels: String
    /// Every vector (norms, biases) dequantized, and with `.f32` storage every matrix too, in one allocation.
    let weights: [Float]
    let embedding: BaseMatrix    // (V, C)
    let output: BaseMatrix       // (V, C); the embedding when tied
    let outputNormOffset: Int    // (C)
    let blocks: [BlockLayout]
    /// Per rotated pair, the divisor of its frequency (`rope_freqs.weight`, Llama 3.x), nil when the file has none.
    let ropeFrequencyFactors: [Float]?
    /// The mapped file, kept for single-token decoding straight from its quantized blocks.
    let file: GGUFFile
    /// Per block, the projections stored in a type `QuantizedMatVec` reads (empty when disabled).
    let quantized: [[Projection: GGUFTensorInfo]]
    let quantizedOutput: GGUFTensorInfo?
    /// Whether a decoded token reads every projection and the output from the quantized blocks (no sgemv on
    /// an f32 copy, whose products OpenBLAS would split over its own threads).
    let decodesFromBlocksOnly: Bool
    /// The buffers of the last training pass, for the next one (a concurrent pass makes its own).
    let spareBuffers = Locked<BufferArena?>(nil)

    /// Loads a llama-family GGUF.
    public convenience init(url: URL, quantizedDecode: Bool = true, base: BaseWeightStorage = .f32, forward: ForwardProducts = .sgemm) throws {
        try self.init(file: GGUFFile(url: url), quantizedDecode: quantizedDecode, base: base, forward: forward)
    }

    /// `quantizedDecode`: single-token passes read the projections from the file's quantized blocks instead of
    /// the f32 copy, with 8-bit activations and integer products (`QuantizedMatVec`: same weights, activations
    /// rounded per group of 32; several times less memory traffic). `base`: whether the matrices are dequantized
    /// at load or stay in the file's types (`BaseWeightStorage`). `forward`: how passes of several tokens multiply
    /// the matrices kept quantized (`ForwardProducts`).
    public init(file: GGUFFile, quantizedDecode: Bool = true, base: BaseWeightStorage = .f32, forward: ForwardProducts = .sgemm) throws {
        self.file = file
        baseStorage = base
        forwardFromBlocks = forward.usesBlocks(storage: base)
        forwardKernels = forward.kernelName(storage: base)
        let h = try Hyperparameters(file: file)
        hyperparameters = h
        let (C, F, V) = (h.width, h.ffnWidth, h.vocabularySize)
        var plan: [(info: GGUFTensorInfo, offset: Int)] = []
        var total = 0
        // Finds a tensor, checks its GGML shape [in, out] (or [n] for a norm) and reserves its place in `weights`
        // (a matrix only when kept in f32).
        func find(_ name: String, _ dimensions: [Int]) throws -> GGUFTensorInfo {
            guard let info = file.tensor(named: name) else { throw ModelError.missingTensor(name: name) }
            guard info.dimensions == dimensions else { throw ModelError.tensorShapeMismatch(name: name, expected: dimensions, actual: info.dimensions) }
            return info
        }
        func reserve(_ info: GGUFTensorInfo) -> Int {
            plan.append((info, total))
            defer { total += info.elementCount }
            return total
        }
        func place(_ name: String, _ dimensions: [Int]) throws -> Int { reserve(try find(name, dimensions)) }
        // A matrix tensor cut into row ranges of `rows` each (one range for an unfused tensor).
        func matrices(_ name: String, _ dimensions: [Int], rows: [Int]) throws -> [BaseMatrix] {
            let info = try find(name, dimensions)
            let offset = base == .f32 ? reserve(info) : nil
            var first = 0
            return rows.map { count in
                defer { first += count }
                return BaseMatrix(info: info, firstRow: first, rows: count, columns: dimensions[0], offset: offset.map { $0 + first * dimensions[0] })
            }
        }
        embedding = try matrices("token_embd.weight", [C, V], rows: [V])[0]
        outputNormOffset = try place("output_norm.weight", [C])
        if file.tensor(named: "output.weight") != nil {
            output = try matrices("output.weight", [C, V], rows: [V])[0]
            tiedOutput = false
        } else {
            output = embedding
            tiedOutput = true
        }
        var blocks: [BlockLayout] = []
        for i in 0..<h.blockCount {
            var b = BlockLayout()
            b.attentionNorm = try place("blk.\(i).attn_norm.weight", [C])
            // Weights are (out, in) row-major, so the projections inside a fused tensor are row ranges of it.
            if h.architecture.fusedProjections, file.tensor(named: "blk.\(i).attn_qkv.weight") != nil {
                let qkv = try matrices("blk.\(i).attn_qkv.weight", [C, h.queryWidth + 2 * h.keyValueWidth],
                                       rows: [h.queryWidth, h.keyValueWidth, h.keyValueWidth])
                (b.matrices[.q], b.matrices[.k], b.matrices[.v]) = (qkv[0], qkv[1], qkv[2])
            } else {
                b.matrices[.q] = try matrices("blk.\(i).attn_q.weight", [C, h.queryWidth], rows: [h.queryWidth])[0]
                b.matrices[.k] = try matrices("blk.\(i).attn_k.weight", [C, h.keyValueWidth], rows: [h.keyValueWidth])[0]
                b.matrices[.v] = try matrices("blk.\(i).attn_v.weight", [C, h.keyValueWidth], rows: [h.keyValueWidth])[0]
            }
            b.matrices[.o] = try matrices("blk.\(i).attn_output.weight", [h.queryWidth, C], rows: [C])[0]
            b.ffnNorm = try place("blk.\(i).ffn_norm.weight", [C])
            if h.architecture.fusedProjections {
                let gateUp = try matrices("blk.\(i).ffn_up.weight", [C, 2 * F], rows: [F, F])
                (b.matrices[.gate], b.matrices[.up]) = (gateUp[0], gateUp[1])
            } else {
                b.matrices[.gate] = try matrices("blk.\(i).ffn_gate.weight", [C, F], rows: [F])[0]
                b.matrices[.up] = try matrices("blk.\(i).ffn_up.weight", [C, F], rows: [F])[0]
            }
            b.matrices[.down] = try matrices("blk.\(i).ffn_down.weight", [F, C], rows: [C])[0]
            if h.architecture.projectionBiases {
                b.qBias = try place("blk.\(i).attn_q.bias", [h.queryWidth])
                b.kBias = try place("blk.\(i).attn_k.bias", [h.keyValueWidth])
                b.vBias = try place("blk.\(i).attn_v.bias", [h.keyValueWidth])
            }
            if h.architecture.queryKeyNorm {
                b.qNorm = try place("blk.\(i).attn_q_norm.weight", [h.headDimension])
                b.kNorm = try place("blk.\(i).attn_k_norm.weight", [h.headDimension])
            }
            if h.architecture.postNorms {
                b.attentionPostNorm = try place("blk.\(i).post_attention_norm.weight", [C])
                b.ffnPostNorm = try place("blk.\(i).post_ffw_norm.weight", [C])
            }
            blocks.append(b)
        }
        self.blocks = blocks
        let names: [Projection: String] = [.q: "attn_q", .k: "attn_k", .v: "attn_v", .o: "attn_output",
                                           .gate: "ffn_gate", .up: "ffn_up", .down: "ffn_down"]
        quantized = (0..<h.blockCount).map { i in
            guard quantizedDecode else { return [:] }
            var table: [Projection: GGUFTensorInfo] = [:]
            for (p, n) in names {
                // A fused tensor (phi3's ffn_up) has more rows than its projection: it decodes from the f32 copy.
                let (out, inp) = h.shape(of: p)
                if let info = file.tensor(named: "blk.\(i).\(n).weight"), info.dimensions == [inp, out], QuantizedMatVec.supports(info.type) {
                    table[p] = info
                }
            }
            return table
        }
        if file.tensor(named: "rope_factors_long.weight") != nil {
            throw ModelError.invalidHyperparameters(reason: "rope_factors_long.weight (LongRoPE, Phi-3 128k) is not supported")
        }
        if let info = file.tensor(named: "rope_freqs.weight") {
            guard info.dimensions == [h.ropeDimensions / 2] else {
                throw ModelError.tensorShapeMismatch(name: info.name, expected: [h.ropeDimensions / 2], actual: info.dimensions)
            }
            var factors = [Float](repeating: 0, count: info.elementCount)
            factors.withUnsafeMutableBufferPointer { file.dequantize(info, into: $0) }
            guard factors.allSatisfy({ $0.isFinite && $0 > 0 }) else {
                throw ModelError.invalidHyperparameters(reason: "rope_freqs.weight must hold positive finite factors")
            }
            ropeFrequencyFactors = factors
        } else {
            ropeFrequencyFactors = nil
        }
        let outputInfo = file.tensor(named: tiedOutput ? "token_embd.weight" : "output.weight")
        quantizedOutput = quantizedDecode && outputInfo.map { QuantizedMatVec.supports($0.type) } == true ? outputInfo : nil
        decodesFromBlocksOnly = quantizedOutput != nil && quantized.allSatisfy { $0.count == names.count }
        weights = [Float](unsafeUninitializedCapacity: total) { buffer, initialized in
            for (info, offset) in plan {
                file.dequantize(info, into: UnsafeMutableBufferPointer(rebasing: buffer[offset..<(offset + info.elementCount)]))
            }
            initialized = total
        }
    }

    /// Bytes held by the dequantized weights (with `.quantized` storage, the norms and biases only).
    public var weightBytes: Int { weights.count * MemoryLayout<Float>.size }

    /// The most bytes of activations and workspaces a training pass of this model has held so far (the
    /// buffers it keeps for the next pass): what a run's peak memory adds to the weights and the adapter's state.
    public var trainingBufferBytes: Int { spareBuffers.withLock { $0?.peakBytes ?? 0 } }

    /// Floats of the workspace a pass dequantizes matrices into with `.quantized` storage: the largest block
    /// matrix or one tile of the output projection (8.8 MB for SmolLM2-135M: 3840 × 576 floats); 0 with `.f32`.
    var workspaceFloats: Int {
        guard baseStorage == .quantized else { return 0 }
        let largest = blocks.flatMap { $0.matrices.values.map(\.floatCount) }.max() ?? 0
        return max(largest, min(output.rows, BaseMatrix.outputTileRows) * output.columns)
    }

    /// Throws unless every value of `output` (logits or log-probabilities of one call) is finite.
    ///
    /// The weights are checked for shape at load, not for value: a NaN or an infinity in a weight, or an
    /// activation that overflows f32, shows up here, where one pass over one vector is all it costs.
    public static func requireFinite<C: Collection>(_ output: C) throws where C.Element: BinaryFloatingPoint {
        guard output.allSatisfy({ $0.isFinite }) else { throw ModelError.nonFiniteOutput }
    }

    /// Throws if a token id is outside the vocabulary (the passes themselves treat that as a programmer error).
    public func validate(tokens: [Int]) throws {
        if let bad = tokens.first(where: { $0 < 0 || $0 >= hyperparameters.vocabularySize }) {
            throw ModelError.invalidToken(id: bad, vocabulary: hyperparameters.vocabularySize)
        }
    }
}
