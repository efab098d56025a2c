import AdaptCore
import Foundation

// Shapes use the legend at the top of LlamaModel.swift.

/// What one block computed, kept for the backward pass (a single instance is reused across blocks at inference).
final class BlockActivations {
    let xIn: FloatBuffer        // (T, C) residual stream entering the block
    let rms1: FloatBuffer       // (T) inverse RMS of xIn
    let xn1: FloatBuffer        // (T, C) attention input
    let q: FloatBuffer          // (T, Cq) after RoPE
    let k: FloatBuffer          // (T, Ckv) after RoPE
    /// With per-head q/k norms: q and k before them (T, Cq), (T, Ckv), and their inverse RMS (T·H), (T·G).
    let qRaw: FloatBuffer?, kRaw: FloatBuffer?, qRms: FloatBuffer?, kRms: FloatBuffer?
    /// With post norms: the attention and feed-forward outputs before them (T, C) and their inverse RMS (T).
    let attentionOut: FloatBuffer?, attentionPostRms: FloatBuffer?, ffnOut: FloatBuffer?, ffnPostRms: FloatBuffer?
    let v: FloatBuffer          // (T, Ckv)
    let probs: FloatBuffer      // (H, T, S) attention probabilities
    let att: FloatBuffer        // (T, Cq) attention output before the o projection
    let xMid: FloatBuffer       // (T, C) residual stream after attention
    let rms2: FloatBuffer       // (T)
    let xn2: FloatBuffer        // (T, C) feed-forward input
    let gate: FloatBuffer       // (T, F)
    let up: FloatBuffer         // (T, F)
    let hidden: FloatBuffer     // (T, F) silu(gate)·up
    /// Per adapted projection: the adapter's input after dropout (nil when there is no dropout) and A·x (T, R_lora).
    var lora: [Projection: (input: FloatBuffer?, ax: FloatBuffer)] = [:]

    init(_ h: LlamaModel.Hyperparameters, tokens T: Int, span S: Int, buffer: (Int) -> FloatBuffer = { FloatBuffer($0) }) {
        xIn = buffer(T * h.width); rms1 = buffer(T); xn1 = buffer(T * h.width)
        q = buffer(T * h.queryWidth); k = buffer(T * h.keyValueWidth); v = buffer(T * h.keyValueWidth)
        if h.architecture.queryKeyNorm {
            qRaw = buffer(T * h.queryWidth); kRaw = buffer(T * h.keyValueWidth)
            qRms = buffer(T * h.headCount); kRms = buffer(T * h.kvHeadCount)
        } else {
            (qRaw, kRaw, qRms, kRms) = (nil, nil, nil, nil)
        }
        if h.architecture.postNorms {
            attentionOut = buffer(T * h.width); attentionPostRms = buffer(T); ffnOut = buffer(T * h.width); ffnPostRms = buffer(T)
        } else {
            (attentionOut, attentionPostRms, ffnOut, ffnPostRms) = (nil, nil, nil, nil)
        }
        probs = buffer(h.headCount * T * S); att = buffer(T * h.queryWidth)
        xMid = buffer(T * h.width); rms2 = buffer(T); xn2 = buffer(T * h.width)
        gate = buffer(T * h.ffnWidth); up = buffer(T * h.ffnWidth); hidden = buffer(T * h.ffnWidth)
    }
}

/// Everything a pass produced: the final normalised states and, when recording, every block's activations.
final class ForwardPass {
    let tokens: Int
    let xOut: FloatBuffer       // (T, C) residual stream after the last block
    let rmsF: FloatBuffer       // (T)
    let xnF: FloatBuffer        // (T, C) input of the output projection
    var blocks: [BlockActivations] = []

    init(_ h: LlamaModel.Hyperparameters, tokens T: Int, buffer: (Int) -> FloatBuffer = { FloatBuffer($0) }) {
        tokens = T
        xOut = buffer(T * h.width); rmsF = buffer(T); xnF = buffer(T * h.width)
    }
}

/// The seeded dropout of the adapter inputs: element e of token t of projection p in block b of sequence n
/// at optimizer step s is kept with probability 1 − p, as a pure function of those numbers.
struct LoRADropout {
    let rng: CounterRNG
    let step: UInt64
    let sequence: Int
    let probability: Float

    /// Writes `rows` of x (T, in) with dropped elements zeroed and kept ones scaled by 1/(1 − p) (inverted
    /// dropout); a row's mask depends on its index t only, so any split of the rows gives the same values.
    func apply(_ x: UnsafePointer<Float>, rows: Range<Int>, width: Int, block: Int, projection: Projection, into y: UnsafeMutablePointer<Float>) {
        precondition(step < 1 << 32 && width <= 1 << 16 && rows.upperBound <= 1 << 20, "dropout counter out of range")
        // Three bits hold the index: a fused target takes its first member's stream, which an adapter
        // never uses beside it (`LoRAConfig.resolved`), so the unfused targets keep the masks they had.
        let projectionIndex = UInt64(Projection.allCases.firstIndex(of: projection.members.first ?? projection)!)
        let stream = ((UInt64(sequence) << 8 | UInt64(block)) << 3 | projectionIndex) << 34
        let scale = 1 / (1 - probability)
        for t in rows {
            var e = 0
            while e < width {
                // One Philox block gives four words: elements e…e+3 of this row.
                let counter = stream | UInt64(t) << 14 | UInt64(e / 4)
                let w = rng.block(.dropout, step: step << 32 | counter >> 32, index: UInt32(truncatingIfNeeded: counter))
                for (j, word) in [w.0, w.1, w.2, w.3].enumerated() where e + j < width {
                    let u = Float(word >> 8) * 0x1p-24
                    let i = t * width + e + j
                    y[i] = u < probability ? 0 : x[i] * scale
                }
                e += 4
            }
        }
    }
}

extension LlamaModel {
    /// Logits of the last position (V) after feeding `tokens` on top of `cache`, which is extended.
    ///
    /// Positions past `hyperparameters.contextLength` are computed (RoPE has no hard limit) but the model was
    /// not trained there: callers stop at the context length. A single token is read from the quantized
    /// blocks when the model was loaded with `quantizedDecode` (the default). OpenBLAS's thread count is held
    /// meanwhile (`BLAS.withThreadCount`), here and in every public pass. With `quantizedPrompt` (a prompt of
    /// generation), several tokens are read from the blocks too where `QuantizedMatMul` runs: their activations
    /// rounded to 8 bits as a decoded token's are, so the logits move by about as much as decode's do.
    public func forward(tokens: [Int], lora: LoRAParameters? = nil, cache: inout KVCache, quantizedPrompt: Bool = false) -> [Float] {
        func lastLogits(_ cache: inout KVCache) -> [Float] {
            let pass = run(tokens: tokens, lora: lora, cache: &cache, record: false, dropout: nil, quantizedPrompt: quantizedPrompt)
            return logits(pass, rows: [tokens.count - 1])
        }
        // A decoded token read wholly from the blocks multiplies on the decode team alone: OpenBLAS's workers,
        // left from the prompt pass, would only compete with it.
        if tokens.count == 1 && decodesFromBlocksOnly { return BLAS.withWorkersParked { lastLogits(&cache) } }
        return BLAS.withThreadCount { lastLogits(&cache) }
    }

    /// Logits of every new position: (T, V) row-major.
    public func forwardAll(tokens: [Int], lora: LoRAParameters? = nil, cache: inout KVCache) -> [Float] {
        BLAS.withThreadCount {
            let pass = run(tokens: tokens, lora: lora, cache: &cache, record: false, dropout: nil)
            return logits(pass, rows: Array(0..<tokens.count))
        }
    }

    /// Logits (rows.count, V) = xnF[rows] · Wₒᵤₜᵀ.
    func logits(_ pass: ForwardPass, rows: [Int], fromQuantized: Bool = true) -> [Float] {
        let (C, V) = (hyperparameters.width, hyperparameters.vocabularySize)
        let selected = FloatBuffer(rows.count * C)   // (n, C)
        for (i, t) in rows.enumerated() { (selected.pointer + i * C).update(from: pass.xnF.pointer + t * C, count: C) }
        var out = [Float](repeating: 0, count: rows.count * V)
        weights.withUnsafeBufferPointer { W in
            out.withUnsafeMutableBufferPointer { o in
                if rows.count == 1, fromQuantized, let info = quantizedOutput {
                    QuantizedMatVec.multiply(info.type, blocks: file.bytes(of: info).baseAddress!, rows: V, columns: C, x: selected.pointer, into: o.baseAddress!)
                } else {
                    BaseMatrixReader(model: self, weights: W.baseAddress!, team: .inline).logits(selected.pointer, rows: rows.count, into: o.baseAddress!)
                }
            }
        }
        return out
    }

    /// The batched forward pass: T new tokens at positions P…P+T−1 attend to the P cached ones and to each
    /// other causally. With `record`, every block's activations are kept for `backward`. Training passes and
    /// `f32Only` ones (the held-out loss) compute as training does: from the f32 values the backward uses, or from
    /// the blocks with `QuantizedMatMul` when the model was loaded with `ForwardProducts.int8` (as every pass of
    /// several tokens of such a model does). With `quantizedPrompt` (inference only) a pass of several tokens
    /// reads the blocks too, on the decode team.
    /// The team splits the products and the element-wise work (its size changes the last bits of the products);
    /// recorded passes compute attention in causal row blocks (`attentionBlockRows`), which `backward` mirrors.
    /// Buffers come from `arena` when given (recorded passes only: their every buffer is written before it is read).
    /// Matrices are read through `reader` when given (a training pass shares one with its backward), else
    /// through a reader of this pass.
    func run(tokens: [Int], lora: LoRAParameters?, cache: inout KVCache, record: Bool, dropout: LoRADropout?,
             f32Only: Bool = false, quantizedPrompt: Bool = false, team: WorkerTeam = .inline, arena: BufferArena? = nil, reader given: BaseMatrixReader? = nil) -> ForwardPass {
        let h = hyperparameters
        let (T, P, C, F) = (tokens.count, cache.count, h.width, h.ffnWidth)
        let (H, G, D, Cq, Ckv) = (h.headCount, h.kvHeadCount, h.headDimension, h.queryWidth, h.keyValueWidth)
        let S = P + T
        precondition(T > 0, "a forward pass needs at least one token")
        precondition(tokens.allSatisfy { $0 >= 0 && $0 < h.vocabularySize }, "token id outside the vocabulary")
        if let lora { lora.validate(for: h) }
        let slots = lora?.slots(blockCount: h.blockCount)
        precondition(arena == nil || record, "only recorded passes write every buffer before reading it")
        let buffer: (Int) -> FloatBuffer = { arena?.take($0) ?? FloatBuffer($0) }
        let pass = ForwardPass(h, tokens: T, buffer: buffer)
        // A prompt of inference (never a training or scoring pass): products from the blocks where `QuantizedMatMul`
        // reads them; causal attention blocks, SwiGLU and the per-row work on the decode team in fixed pieces with
        // OpenBLAS single-threaded. Unless a product stays on sgemm (another type, another CPU, an adapter), the
        // result does not depend on the thread count.
        let inferencePrompt = T > 1 && quantizedPrompt && !record && !f32Only
        // Any other pass of several tokens (training, scoring) of a model asked for `ForwardProducts.int8` reads the
        // blocks with the same kernels, its tasks on the pass's team; the rest of the pass is unchanged.
        let blocksForward = T > 1 && forwardFromBlocks && !inferencePrompt
        let scale = h.attentionScale
        let group = H / G

        weights.withUnsafeBufferPointer { Wbuf in
            let W = Wbuf.baseAddress!
            let reader = given ?? BaseMatrixReader(model: self, weights: W, team: team)
            // Work on whole rows (tokens): on the team, or for a prompt of inference in fixed pieces of 16 rows on
            // the decode team (each row computed alone, so the bits do not depend on the pieces).
            func forEachRows(_ body: (Range<Int>) -> Void) {
                guard inferencePrompt else { return team.forEachRange(T, body) }
                let piece = 16
                DecodeTeam.forEachTask((T + piece - 1) / piece, members: BLAS.threads) { k in body((k * piece)..<min(T, (k + 1) * piece)) }
            }
            let x = buffer(T * C)                  // (T, C) residual stream
            for (t, id) in tokens.enumerated() { reader.embeddingRow(id, into: x.pointer + t * C) }
            if h.architecture.scaledEmbedding {
                let factor = Float(C).squareRoot()
                for i in 0..<(T * C) { x.pointer[i] *= factor }
            }
            let shared = record ? nil : BlockActivations(h, tokens: T, span: S)
            let projected = buffer(T * C)          // (T, C) output of o and down
            let (globalAngles, localAngles) = rotaryAngles(rows: T, firstPosition: P)

            // y (T, out) = x (T, in) · Wᵀ, plus the adapter's (alpha/rank)·(A·drop(x))ᵀ·Bᵀ when it targets `p`.
            func linear(_ p: Projection, block b: Int, _ input: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>, acts: BlockActivations) {
                linears([p], block: b, input, into: [y], acts: acts)
            }

            // `linear` of each of `ps`, projections that read the same input (q, k, v; gate, up). A decoded token
            // reads those kept quantized as one product set: the input rounded once, one hand-off to the team.
            func linears(_ ps: [Projection], block b: Int, _ input: UnsafePointer<Float>, into ys: [UnsafeMutablePointer<Float>],
                         acts: BlockActivations) {
                // Single tokens of training passes stay on the f32 values their backward pass multiplies with.
                let fromBlocks = T == 1 && !record && !f32Only
                let products = zip(ps, ys).compactMap { p, y -> QuantizedMatVec.Product? in
                    guard fromBlocks, let info = quantized[b][p] else { return nil }
                    return QuantizedMatVec.Product(type: info.type, blocks: file.bytes(of: info).baseAddress!, rows: h.shape(of: p).output, y: y)
                }
                if !products.isEmpty { QuantizedMatVec.multiply(products, columns: h.shape(of: ps[0]).input, x: input) }
                // A prompt of inference: every token times the same blocks, where the tile kernels read the type.
                let batched = zip(ps, ys).compactMap { p, y -> QuantizedMatVec.Product? in
                    guard inferencePrompt, let info = quantized[b][p], QuantizedMatMul.supports(info.type) else { return nil }
                    return QuantizedMatVec.Product(type: info.type, blocks: file.bytes(of: info).baseAddress!, rows: h.shape(of: p).output, y: y)
                }
                if !batched.isEmpty { QuantizedMatMul.multiply(batched, tokens: T, columns: h.shape(of: ps[0]).input, x: input) }
                let tiled = zip(ps, ys).compactMap { p, y in blocksForward ? blocks[b].matrix(p).blockProduct(in: file, into: y) : nil }
                if !tiled.isEmpty {
                    QuantizedMatMul.multiply(tiled, tokens: T, columns: h.shape(of: ps[0]).input, x: input, forEachTask: reader.forEachTask)
                }
                let done = Set((products + batched + tiled).map(\.y))
                for (p, y) in zip(ps, ys) where !done.contains(y) {
                    let (out, inp) = h.shape(of: p)
                    reader.withRows(of: blocks[b].matrix(p)) { Wp in
                        if T == 1 {
                            // Decoding: a matrix-vector product streams the weights once, without sgemm's packing.
                            BLAS.sgemv(m: out, n: inp, a: Wp, x: input, y: y)
                        } else {
                            team.sgemm(transposeB: true, m: T, n: out, k: inp, a: input, b: Wp, c: y)
                        }
                    }
                }
                for (p, y) in zip(ps, ys) {
                    let out = h.shape(of: p).output
                    if let bias = blocks[b].bias(of: p) {
                        forEachRows { rows in
                            for t in rows { for o in 0..<out { y[t * out + o] += W[bias + o] } }
                        }
                    }
                    adapter(p, block: b, input, into: [y], acts: acts)
                }
            }

            // ys[m] (T, out_m) += (alpha/rank)·(A·drop(x))ᵀ·B_mᵀ when the adapter targets `p`, B_m being the rows
            // of B that belong to p's m-th member (p itself when it is not fused).
            func adapter(_ p: Projection, block b: Int, _ input: UnsafePointer<Float>, into ys: [UnsafeMutablePointer<Float>],
                         acts: BlockActivations) {
                guard let lora, let slot = slots?[b][p] else { return }
                let inp = h.shape(of: p).input
                let r = lora.config.rank
                var source = input
                var dropped: FloatBuffer? = nil
                if let dropout, dropout.probability > 0 {
                    let kept = buffer(T * inp)
                    forEachRows { rows in
                        dropout.apply(input, rows: rows, width: inp, block: b, projection: p, into: kept.pointer)
                    }
                    source = UnsafePointer(kept.pointer)
                    dropped = kept
                }
                let ax = buffer(T * r)             // (T, r) = drop(x) · Aᵀ
                lora.values[slot.a].withUnsafeBufferPointer { A in
                    team.sgemm(transposeB: true, m: T, n: r, k: inp, a: source, b: A.baseAddress!, c: ax.pointer)
                }
                lora.values[slot.b].withUnsafeBufferPointer { B in
                    var row = 0
                    for (member, y) in zip(p.members.isEmpty ? [p] : p.members, ys) {
                        let out = h.shape(of: member).output
                        team.sgemm(transposeB: true, m: T, n: out, k: r, alpha: lora.config.scale, a: ax.pointer,
                                   b: B.baseAddress! + row * r, beta: 1, c: y)
                        row += out
                    }
                }
                if record { acts.lora[p] = (dropped, ax) }
            }

            for b in 0..<h.blockCount {
                let layout = blocks[b]
                let window = h.isSlidingWindow(block: b) ? h.slidingWindow : nil
                let angles = window == nil ? globalAngles : localAngles!
                let a = shared ?? BlockActivations(h, tokens: T, span: S, buffer: buffer)
                if record { pass.blocks.append(a) }
                // Attention: RMSNorm, projections, RoPE, cache append, causal GQA softmax(q·kᵀ/√D)·v, o.
                forEachRows { rows in
                    let first = rows.lowerBound
                    (a.xIn.pointer + first * C).update(from: x.pointer + first * C, count: rows.count * C)
                    Kernels.rmsNorm(x.pointer + first * C, weight: W + layout.attentionNorm, rows: rows.count, width: C,
                                    epsilon: h.rmsEpsilon, into: a.xn1.pointer + first * C, inverseRMS: a.rms1.pointer + first)
                }
                linears([.q, .k, .v], block: b, a.xn1.pointer, into: [a.q.pointer, a.k.pointer, a.v.pointer], acts: a)
                adapter(.qkv, block: b, a.xn1.pointer, into: [a.q.pointer, a.k.pointer, a.v.pointer], acts: a)
                if let qNorm = layout.qNorm, let kNorm = layout.kNorm {
                    forEachRows { rows in
                        Self.headNorm(a.q, saving: a.qRaw!, inverseRMS: a.qRms!, weight: W + qNorm, heads: H, rows: rows, h: h)
                        Self.headNorm(a.k, saving: a.kRaw!, inverseRMS: a.kRms!, weight: W + kNorm, heads: G, rows: rows, h: h)
                    }
                }
                let pairing = h.architecture.rotaryPairing
                forEachRows { rows in
                    Kernels.rope(a.q.pointer, heads: H, headDim: D, angles: angles, rows: rows, pairing: pairing)
                    Kernels.rope(a.k.pointer, heads: G, headDim: D, angles: angles, rows: rows, pairing: pairing)
                }
                cache.append(block: b, keys: a.k.pointer, values: a.v.pointer, floats: T * Ckv, blockCount: h.blockCount)
                cache.keys[b].withUnsafeBufferPointer { K in           // (S, Ckv)
                    cache.values[b].withUnsafeBufferPointer { V in     // (S, Ckv)
                        if record {
                            causalAttention(a, keys: K.baseAddress!, values: V.baseAddress!, tokens: T, cached: P, window: window, team: team)
                            return
                        }
                        if inferencePrompt {
                            // In causal row blocks, as a recorded pass: the masked keys right of each block are skipped.
                            let threads = BLAS.threads
                            BLAS.withThreadCount(1) {
                                causalAttention(a, keys: K.baseAddress!, values: V.baseAddress!, tokens: T, cached: P, window: window) {
                                    DecodeTeam.forEachTask($0, members: threads, $1)
                                }
                            }
                            return
                        }
                        // Each head writes its own scores and its own columns of att.
                        func attend(_ head: Int) {
                            let kv = head / group
                            let scores = a.probs.pointer + head * T * S   // (T, S)
                            BLAS.sgemm(transposeB: true, m: T, n: S, k: D, alpha: scale,
                                       a: a.q.pointer + head * D, lda: Cq, b: K.baseAddress! + kv * D, ldb: Ckv, c: scores)
                            Kernels.maskedSoftmax(scores, rows: T, width: S, window: window) { P + $0 + 1 }
                            BLAS.sgemm(m: T, n: D, k: S, a: scores, b: V.baseAddress! + kv * D, ldb: Ckv,
                                       c: a.att.pointer + head * D, ldc: Cq)
                        }
                        let threads = BLAS.threads
                        if T == 1, threads > 1 {
                            // Decoding: the heads are spread over the decode team, and OpenBLAS kept single-threaded
                            // meanwhile makes every head's products those of one thread, whichever member runs it.
                            BLAS.withThreadCount(1) { DecodeTeam.forEachTask(H, members: threads, attend) }
                        } else {
                            for head in 0..<H { attend(head) }
                        }
                    }
                }
                linear(.o, block: b, a.att.pointer, into: projected.pointer, acts: a)
                if let norm = layout.attentionPostNorm { postNorm(projected, saving: a.attentionOut!, inverseRMS: a.attentionPostRms!, weight: W + norm) }
                forEachRows { rows in
                    let first = rows.lowerBound
                    for i in (first * C)..<(rows.upperBound * C) { x.pointer[i] += projected.pointer[i] }
                    (a.xMid.pointer + first * C).update(from: x.pointer + first * C, count: rows.count * C)
                    // Feed-forward: RMSNorm, SwiGLU, down.
                    Kernels.rmsNorm(x.pointer + first * C, weight: W + layout.ffnNorm, rows: rows.count, width: C,
                                    epsilon: h.rmsEpsilon, into: a.xn2.pointer + first * C, inverseRMS: a.rms2.pointer + first)
                }
                linears([.gate, .up], block: b, a.xn2.pointer, into: [a.gate.pointer, a.up.pointer], acts: a)
                adapter(.gateUp, block: b, a.xn2.pointer, into: [a.gate.pointer, a.up.pointer], acts: a)
                let activation = h.architecture.activation
                func activate(_ range: Range<Int>) {
                    let i = range.lowerBound
                    switch activation {
                    case .silu: Kernels.swiglu(gate: a.gate.pointer + i, up: a.up.pointer + i, count: range.count, into: a.hidden.pointer + i)
                    case .geluTanh: Kernels.geglu(gate: a.gate.pointer + i, up: a.up.pointer + i, count: range.count, into: a.hidden.pointer + i)
                    }
                }
                if inferencePrompt {
                    // Fixed pieces whose starts are multiples of 16: each value is the same whoever computes it.
                    let piece = 16_384, count = T * F
                    DecodeTeam.forEachTask((count + piece - 1) / piece, members: BLAS.threads) { k in
                        let range = (k * piece)..<min(count, (k + 1) * piece)
                        if activation == .silu, QuantizedMatMul.isAvailable {
                            let i = range.lowerBound
                            QuantizedMatMul.swiglu(gate: a.gate.pointer + i, up: a.up.pointer + i, count: range.count, into: a.hidden.pointer + i)
                        } else {
                            activate(range)
                        }
                    }
                } else {
                    team.forEachRange(T * F, align: 16, minimum: 4096, activate)
                }
                linear(.down, block: b, a.hidden.pointer, into: projected.pointer, acts: a)
                if let norm = layout.ffnPostNorm { postNorm(projected, saving: a.ffnOut!, inverseRMS: a.ffnPostRms!, weight: W + norm) }
                if inferencePrompt {
                    forEachRows { rows in
                        for i in (rows.lowerBound * C)..<(rows.upperBound * C) { x.pointer[i] += projected.pointer[i] }
                    }
                } else {
                    team.forEachRange(T * C, align: 16, minimum: 4096) { range in
                        for i in range { x.pointer[i] += projected.pointer[i] }
                    }
                }
            }
            // y (T, C) ← RMSNorm(y), y's input kept in `saving` for the backward (Gemma's post norms).
            func postNorm(_ y: FloatBuffer, saving raw: FloatBuffer, inverseRMS: FloatBuffer, weight: UnsafePointer<Float>) {
                forEachRows { rows in
                    let first = rows.lowerBound
                    (raw.pointer + first * C).update(from: y.pointer + first * C, count: rows.count * C)
                    Kernels.rmsNorm(raw.pointer + first * C, weight: weight, rows: rows.count, width: C, epsilon: h.rmsEpsilon,
                                    into: y.pointer + first * C, inverseRMS: inverseRMS.pointer + first)
                }
            }
            cache.advance(by: T)
            forEachRows { rows in
                let first = rows.lowerBound
                (pass.xOut.pointer + first * C).update(from: x.pointer + first * C, count: rows.count * C)
                Kernels.rmsNorm(x.pointer + first * C, weight: W + outputNormOffset, rows: rows.count, width: C,
                                epsilon: h.rmsEpsilon, into: pass.xnF.pointer + first * C, inverseRMS: pass.rmsF.pointer + first)
            }
        }
        return pass
    }

    /// The rotary angles of global blocks (the file's base, frequency factors and scaling) and, when the model
    /// has sliding-window blocks, of those (their own base, nothing else).
    func rotaryAngles(rows T: Int, firstPosition P: Int) -> (global: Kernels.RotaryAngles, local: Kernels.RotaryAngles?) {
        let h = hyperparameters
        let global = Kernels.RotaryAngles(rows: T, rotated: h.ropeDimensions, base: h.ropeBase, firstPosition: P,
                                          factors: ropeFrequencyFactors, scale: h.ropeScale)
        guard h.slidingWindow != nil else { return (global, nil) }
        return (global, Kernels.RotaryAngles(rows: T, rotated: h.ropeDimensions, base: h.architecture.slidingWindowRopeBase, firstPosition: P))
    }

    /// RMSNorm of each head of `rows` of x (T, heads·D) in place, its input kept in `saving` and its inverse
    /// RMS (T·heads) in `inverseRMS`: Qwen3's and Gemma 3's q/k norm.
    static func headNorm(_ x: FloatBuffer, saving raw: FloatBuffer, inverseRMS: FloatBuffer, weight: UnsafePointer<Float>,
                         heads: Int, rows: Range<Int>, h: Hyperparameters) {
        let D = h.headDimension, first = rows.lowerBound * heads * D
        (raw.pointer + first).update(from: x.pointer + first, count: rows.count * heads * D)
        Kernels.rmsNorm(raw.pointer + first, weight: weight, rows: rows.count * heads, width: D, epsilon: h.rmsEpsilon,
                        into: x.pointer + first, inverseRMS: inverseRMS.pointer + rows.lowerBound * heads)
    }
}
