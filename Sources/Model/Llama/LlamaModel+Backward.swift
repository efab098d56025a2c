import AdaptCore
import Foundation

// Shapes use the legend at the top of LlamaModel.swift; here S = T (a training pass starts at position 0),
// n = predicted positions with a non-zero weight, r = LoRA rank.
//
// Memory of a training pass, per token: every block keeps xIn, xn1, xMid, xn2 (4C), q and att (2Cq), k and v
// (2Ckv), gate, up and hidden (3F), two inverse RMS values and the attention probabilities (H·T); each adapted
// projection adds A·x (r) and, with dropout, its dropped input (in); the predicted rows add their logits and
// their gradient (2V). For SmolLM2-135M, rank 8 on q, k, v, o with dropout: 30 · (8450 + 2336) floats
// ≈ 1.29 MB, plus 30 · 9 · T floats (1.08 KB · T) of attention, plus 393 KB of logits: about 2 MB per token
// at T = 128–256 (peak RSS agrees: BENCHMARKS.md, code choices). The backward's
// workspaces add one block's worth, with the score gradients of every head (H·T per token).
//
// Every buffer of a pass comes from the model's `BufferArena` and goes back to it after the sequence, so
// after the first step a training step allocates no activation memory (it used to fault in about 43,000
// fresh pages a step at T = 256 and zero them on the calling thread).

extension LlamaModel {
    /// Mean over weighted target tokens of the cross-entropy, and its gradient with respect to every LoRA
    /// tensor (same layout as `lora.values`).
    ///
    /// The loss is Σ wᵢ·CEᵢ / Σ wᵢ over the whole batch; `weightSum` is Σ wᵢ, so callers accumulating several
    /// batches can combine them (gradient of the combined mean = Σ weightSumₖ·gradientsₖ / Σ weightSumₖ).
    /// Dropout masks are a pure function of (dropoutSeed, step, sequence index in the batch, block, projection,
    /// token, element). Sequences are processed one after another in batch order and every reduction has a
    /// fixed order, so the same inputs and thread count give bit-identical results.
    ///
    /// `threads` (default: OpenBLAS's current setting) is the size of the team that splits the pass's products
    /// and element-wise work by fixed ranges; OpenBLAS is kept single-threaded meanwhile (`WorkerTeam.with`).
    /// The team's size changes the last bits of the products, as OpenBLAS's own threading does. Throws
    /// `ModelError.threadsUnavailable` when the system will not start that many threads.
    public func lossAndGradients(_ batch: [TrainingSequence], lora: LoRAParameters, dropoutSeed: UInt64, step: UInt64,
                                 threads: Int? = nil) throws
        -> (loss: Double, weightSum: Double, gradients: [[Float]]) {
        lora.validate(for: hyperparameters)
        var gradients = lora.values.map { [Float](repeating: 0, count: $0.count) }
        let weightSum = batch.reduce(0.0) { total, sequence in sequence.weights.reduce(total) { $0 + Double($1) } }
        guard weightSum > 0 else { return (0, 0, gradients) }
        let threads = max(1, threads ?? BLAS.threads)
        var lossSum = 0.0
        let arena = spareBuffers.withLock { $0.take() } ?? BufferArena()
        defer { spareBuffers.withLock { $0 = arena } }
        let (C, V) = (hyperparameters.width, hyperparameters.vocabularySize)
        try WorkerTeam.with(count: threads) { team in
            for (index, sequence) in batch.enumerated() {
                let rows = sequence.weights.indices.filter { sequence.weights[$0] != 0 }
                guard !rows.isEmpty else { continue }
                let dropout = LoRADropout(rng: CounterRNG(seed: dropoutSeed), step: step, sequence: index, probability: lora.config.dropout)
                // The last token is only ever a target, so the pass stops one short of it.
                let inputs = Array(sequence.tokens.dropLast())
                var cache = KVCache()
                weights.withUnsafeBufferPointer { W in
                    // One reader (and workspace) for the forward, the logits and the backward of this sequence.
                    let reader = BaseMatrixReader(model: self, weights: W.baseAddress!, team: team, workspace: { arena.take($0) })
                    let pass = run(tokens: inputs, lora: lora, cache: &cache, record: true, dropout: dropout, team: team, arena: arena, reader: reader)
                    // Logits (n, V) = x̂F[rows] · Wₒᵤₜᵀ, from the f32 weights the backward multiplies with; they become ∂loss/∂logits.
                    let selected = arena.take(rows.count * C)                                 // (n, C)
                    for (i, t) in rows.enumerated() { (selected.pointer + i * C).update(from: pass.xnF.pointer + t * C, count: C) }
                    let dLogits = arena.take(rows.count * V)                                  // (n, V)
                    reader.logits(selected.pointer, rows: rows.count, into: dLogits.pointer)
                    var rowLosses = [Double](repeating: 0, count: rows.count)                  // (n) wᵢ·CEᵢ
                    rowLosses.withUnsafeMutableBufferPointer { losses in
                        team.forEachRange(rows.count) { range in
                            for i in range {
                                let t = rows[i]
                                let w = Double(sequence.weights[t])
                                let target = sequence.tokens[t + 1]
                                let row = dLogits.pointer + i * V
                                let logit = row[target]
                                // One exponential per entry, kept in the row: eⱼ = exp(ℓⱼ − m), z = Σ eⱼ.
                                let (m, z) = Kernels.exponentiateShifted(row, count: V)
                                let logZ = Double(m) + log(z)
                                losses[i] = w * (logZ - Double(logit))
                                // softmax − one-hot, scaled by this token's share of the batch's weight: eⱼ · (k / z).
                                let k = Float(w / weightSum)
                                let factor = Float(w / weightSum / z)
                                for j in 0..<V { row[j] *= factor }
                                row[target] -= k
                            }
                        }
                    }
                    // Summed in row order, whatever member computed each row.
                    for loss in rowLosses { lossSum += loss }
                    backward(pass, rows: rows, dLogits: dLogits.pointer, lora: lora, dropout: dropout, gradients: &gradients,
                             reader: reader, arena: arena)
                }
                // The next sequence reuses this one's buffers.
                arena.reclaim()
            }
        }
        return (lossSum / weightSum, weightSum, gradients)
    }

    /// Back-propagates ∂loss/∂logits of `rows` through the frozen model into the adapter's gradients.
    /// dLogits: (n, V), n = rows.count. Workspaces come from `arena`.
    func backward(_ pass: ForwardPass, rows: [Int], dLogits: UnsafePointer<Float>, lora: LoRAParameters, dropout: LoRADropout,
                  gradients: inout [[Float]], reader: BaseMatrixReader, arena: BufferArena) {
        let h = hyperparameters
        let (T, C, F) = (pass.tokens, h.width, h.ffnWidth)
        let (H, G, D, Cq, Ckv) = (h.headCount, h.kvHeadCount, h.headDimension, h.queryWidth, h.keyValueWidth)
        let slots = lora.slots(blockCount: h.blockCount)
        let team = reader.team

        do {
            let W = reader.weights
            // dx̂F (T, C): the output projection's input gradient, non-zero only on predicted rows.
            let dxnF = arena.take(T * C)
            let dSelected = arena.take(rows.count * C)                  // (n, C) = dLogits (n, V) · Wout (V, C)
            reader.logitsBackward(dLogits, rows: rows.count, into: dSelected.pointer)
            dxnF.pointer.update(repeating: 0, count: T * C)
            for (i, t) in rows.enumerated() { (dxnF.pointer + t * C).update(from: dSelected.pointer + i * C, count: C) }
            let dx = arena.take(T * C)                                   // (T, C) ∂loss/∂residual stream
            team.forEachRange(T) { range in
                let first = range.lowerBound
                (dx.pointer + first * C).update(repeating: 0, count: range.count * C)
                Kernels.rmsNormBackward(dxnF.pointer + first * C, x: pass.xOut.pointer + first * C, weight: W + outputNormOffset,
                                        inverseRMS: pass.rmsF.pointer + first, rows: range.count, width: C,
                                        accumulateInto: dx.pointer + first * C)
            }

            // Given dy (T, out) of projection p with input x (T, in): dX (T, in) = beta·dX + dy · W, and the
            // adapter's dB (out, r) += s·dyᵀ·(A·x̃), dA (r, in) += (s·dy·B)ᵀ · x̃, dX += drop′(s·dy·B·A), x̃ = drop(x).
            // Workspaces of the adapter paths, overwritten by every projection (sgemm with beta 0).
            let dAx = arena.take(T * lora.config.rank)                               // (T, r)
            let dSource = arena.take(T * max(C, Cq, F))                              // (T, in) ∂loss/∂x̃
            let (globalAngles, localAngles) = rotaryAngles(rows: T, firstPosition: 0)
            let pairing = h.architecture.rotaryPairing

            func linearBackward(_ p: Projection, block b: Int, _ dy: UnsafePointer<Float>, input x: UnsafePointer<Float>,
                                acts: BlockActivations, beta: Float, into dX: UnsafeMutablePointer<Float>) {
                let (out, inp) = h.shape(of: p)
                reader.withRows(of: blocks[b].matrix(p)) { Wp in
                    team.sgemm(m: T, n: inp, k: out, a: dy, b: Wp, beta: beta, c: dX)
                }
                adapterBackward(p, block: b, [dy], input: x, acts: acts, into: dX)
            }

            // The adapter's part of linearBackward for target p, whose members' output gradients are dys (p alone
            // when it is not fused): B_m are row ranges of B and dB, and s·dy·B sums over the members. Adds to dX.
            func adapterBackward(_ p: Projection, block b: Int, _ dys: [UnsafePointer<Float>], input x: UnsafePointer<Float>,
                                 acts: BlockActivations, into dX: UnsafeMutablePointer<Float>) {
                guard let slot = slots[b][p], let saved = acts.lora[p] else { return }
                let inp = h.shape(of: p).input
                let r = lora.config.rank, s = lora.config.scale
                let source = saved.input.map { UnsafePointer($0.pointer) } ?? x   // x̃ (T, in)
                let parts = Array(zip(p.members.isEmpty ? [p] : p.members, dys))
                lora.values[slot.b].withUnsafeBufferPointer { B in
                    var row = 0
                    for (i, (member, dy)) in parts.enumerated() {
                        let out = h.shape(of: member).output
                        team.sgemm(m: T, n: r, k: out, alpha: s, a: dy, b: B.baseAddress! + row * r, beta: i == 0 ? 0 : 1, c: dAx.pointer)
                        row += out
                    }
                }
                gradients[slot.b].withUnsafeMutableBufferPointer { dB in
                    var row = 0
                    for (member, dy) in parts {
                        let out = h.shape(of: member).output
                        team.sgemm(transposeA: true, m: out, n: r, k: T, alpha: s, a: dy, b: saved.ax.pointer, beta: 1,
                                   c: dB.baseAddress! + row * r)
                        row += out
                    }
                }
                gradients[slot.a].withUnsafeMutableBufferPointer { dA in
                    team.sgemm(transposeA: true, m: r, n: inp, k: T, a: dAx.pointer, b: source, beta: 1, c: dA.baseAddress!)
                }
                lora.values[slot.a].withUnsafeBufferPointer { A in
                    if saved.input != nil {
                        team.sgemm(m: T, n: inp, k: r, a: dAx.pointer, b: A.baseAddress!, c: dSource.pointer)
                        // Inverted dropout is linear with the same mask: its backward is the same map.
                        team.forEachRange(T) { range in
                            dropout.apply(dSource.pointer, rows: range, width: inp, block: b, projection: p, into: dSource.pointer)
                            for i in (range.lowerBound * inp)..<(range.upperBound * inp) { dX[i] += dSource.pointer[i] }
                        }
                    } else {
                        // Without dropout ∂loss/∂x̃ is ∂loss/∂x: sgemm adds it to dX directly.
                        team.sgemm(m: T, n: inp, k: r, a: dAx.pointer, b: A.baseAddress!, beta: 1, c: dX)
                    }
                }
            }

            let dHidden = arena.take(T * F), dGate = arena.take(T * F), dUp = arena.take(T * F)      // (T, F)
            let dxn = arena.take(T * C)                                                         // (T, C)
            let dAtt = arena.take(T * Cq), dq = arena.take(T * Cq)                              // (T, Cq)
            let dk = arena.take(T * Ckv), dv = arena.take(T * Ckv)                              // (T, Ckv)
            let dScores = arena.take(H * T * T)                                                 // (H, T, S)
            let headNorms = h.architecture.queryKeyNorm
            let dqRaw = headNorms ? arena.take(T * Cq) : nil, dkRaw = headNorms ? arena.take(T * Ckv) : nil
            let dPost = h.architecture.postNorms ? arena.take(T * C) : nil                    // (T, C)
            /// ∂loss/∂ the input of a post norm, from dx: dPost = RMSNorm's backward of dx.
            func postNormBackward(input: FloatBuffer, weight: UnsafePointer<Float>, inverseRMS: FloatBuffer) -> UnsafePointer<Float> {
                let out = dPost!
                team.forEachRange(T) { range in
                    let first = range.lowerBound
                    (out.pointer + first * C).update(repeating: 0, count: range.count * C)
                    Kernels.rmsNormBackward(dx.pointer + first * C, x: input.pointer + first * C, weight: weight,
                                            inverseRMS: inverseRMS.pointer + first, rows: range.count, width: C,
                                            accumulateInto: out.pointer + first * C)
                }
                return UnsafePointer(out.pointer)
            }
            /// dx += RMSNorm's backward of dxn, rows split over the team.
            func normBackward(input: UnsafePointer<Float>, weight: UnsafePointer<Float>, inverseRMS: UnsafePointer<Float>) {
                team.forEachRange(T) { range in
                    let first = range.lowerBound
                    Kernels.rmsNormBackward(dxn.pointer + first * C, x: input + first * C, weight: weight,
                                            inverseRMS: inverseRMS + first, rows: range.count, width: C,
                                            accumulateInto: dx.pointer + first * C)
                }
            }
            for b in stride(from: h.blockCount - 1, through: 0, by: -1) {
                let a = pass.blocks[b], layout = blocks[b]
                let angles = h.isSlidingWindow(block: b) ? localAngles! : globalAngles
                // Feed-forward: x += [post norm](down(act(gate(x̂₂))·up(x̂₂))).
                var dDown = UnsafePointer(dx.pointer)
                if let norm = layout.ffnPostNorm { dDown = postNormBackward(input: a.ffnOut!, weight: W + norm, inverseRMS: a.ffnPostRms!) }
                linearBackward(.down, block: b, dDown, input: a.hidden.pointer, acts: a, beta: 0, into: dHidden.pointer)
                let activation = h.architecture.activation
                team.forEachRange(T * F, align: 16, minimum: 4096) { range in
                    let i = range.lowerBound
                    switch activation {
                    case .silu:
                        Kernels.swigluBackward(dHidden.pointer + i, gate: a.gate.pointer + i, up: a.up.pointer + i, count: range.count,
                                               dGate: dGate.pointer + i, dUp: dUp.pointer + i)
                    case .geluTanh:
                        Kernels.gegluBackward(dHidden.pointer + i, gate: a.gate.pointer + i, up: a.up.pointer + i, count: range.count,
                                              dGate: dGate.pointer + i, dUp: dUp.pointer + i)
                    }
                }
                linearBackward(.gate, block: b, dGate.pointer, input: a.xn2.pointer, acts: a, beta: 0, into: dxn.pointer)
                linearBackward(.up, block: b, dUp.pointer, input: a.xn2.pointer, acts: a, beta: 1, into: dxn.pointer)
                adapterBackward(.gateUp, block: b, [dGate.pointer, dUp.pointer], input: a.xn2.pointer, acts: a, into: dxn.pointer)
                normBackward(input: a.xMid.pointer, weight: W + layout.ffnNorm, inverseRMS: a.rms2.pointer)

                // Attention: x += o(softmax(q·kᵀ/√D + mask)·v); RoPE is a rotation: its backward rotates back.
                var dO = UnsafePointer(dx.pointer)
                if let norm = layout.attentionPostNorm {
                    dO = postNormBackward(input: a.attentionOut!, weight: W + norm, inverseRMS: a.attentionPostRms!)
                }
                linearBackward(.o, block: b, dO, input: a.att.pointer, acts: a, beta: 0, into: dAtt.pointer)
                causalAttentionBackward(a, dAtt: dAtt.pointer, dScores: dScores.pointer, dq: dq.pointer, dk: dk.pointer,
                                        dv: dv.pointer, tokens: T, team: team)
                team.forEachRange(T) { range in
                    Kernels.rope(dq.pointer, heads: H, headDim: D, angles: angles, rows: range, inverse: true, pairing: pairing)
                    Kernels.rope(dk.pointer, heads: G, headDim: D, angles: angles, rows: range, inverse: true, pairing: pairing)
                }
                var (dqIn, dkIn) = (dq, dk)      // ∂loss/∂ the projections' outputs
                if let qNorm = layout.qNorm, let kNorm = layout.kNorm, let dqRaw, let dkRaw {
                    team.forEachRange(T) { range in
                        for (dy, raw, rms, weight, heads, into) in [(dq, a.qRaw!, a.qRms!, qNorm, H, dqRaw), (dk, a.kRaw!, a.kRms!, kNorm, G, dkRaw)] {
                            let first = range.lowerBound * heads * D
                            (into.pointer + first).update(repeating: 0, count: range.count * heads * D)
                            Kernels.rmsNormBackward(dy.pointer + first, x: raw.pointer + first, weight: W + weight,
                                                    inverseRMS: rms.pointer + range.lowerBound * heads, rows: range.count * heads,
                                                    width: D, accumulateInto: into.pointer + first)
                        }
                    }
                    (dqIn, dkIn) = (dqRaw, dkRaw)
                }
                linearBackward(.q, block: b, dqIn.pointer, input: a.xn1.pointer, acts: a, beta: 0, into: dxn.pointer)
                linearBackward(.k, block: b, dkIn.pointer, input: a.xn1.pointer, acts: a, beta: 1, into: dxn.pointer)
                linearBackward(.v, block: b, dv.pointer, input: a.xn1.pointer, acts: a, beta: 1, into: dxn.pointer)
                adapterBackward(.qkv, block: b, [dqIn.pointer, dkIn.pointer, dv.pointer], input: a.xn1.pointer, acts: a, into: dxn.pointer)
                normBackward(input: a.xIn.pointer, weight: W + layout.attentionNorm, inverseRMS: a.rms1.pointer)
            }
        }
    }
}
