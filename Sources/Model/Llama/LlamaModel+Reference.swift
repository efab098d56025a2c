import Foundation

// Shapes use the legend at the top of LlamaModel.swift.

extension LlamaModel {
    /// The slow, obvious forward pass: one position at a time, plain loops with Double accumulators, no BLAS,
    /// an adapter applied as written in the LoRA paper (no dropout). The test oracle for `forwardAll`.
    /// Returns the logits of every position (T, V).
    public func referenceForward(tokens: [Int], lora: LoRAParameters? = nil) -> [Float] {
        let h = hyperparameters
        let (C, F, V, H, D) = (h.width, h.ffnWidth, h.vocabularySize, h.headCount, h.headDimension)
        let slots = lora?.slots(blockCount: h.blockCount)
        var keys = [[[Float]]](repeating: [], count: h.blockCount)    // [block][position] (Ckv)
        var values = [[[Float]]](repeating: [], count: h.blockCount)
        var logits: [Float] = []

        // The matrices' f32 values, from the copy or dequantized here: the oracle reads what the passes read.
        func dequantized(_ m: BaseMatrix) -> [Float] {
            [Float](unsafeUninitializedCapacity: m.floatCount) { buffer, initialized in
                weights.withUnsafeBufferPointer { W in
                    BaseMatrixReader(model: self, weights: W.baseAddress!, team: .inline).withRows(of: m) {
                        buffer.baseAddress!.update(from: $0, count: m.floatCount)
                    }
                }
                initialized = m.floatCount
            }
        }
        let embeddingValues = dequantized(embedding)
        let outputValues = tiedOutput ? embeddingValues : dequantized(output)
        var matrices: [Int: [Float]] = [:]   // per block and projection, made on first use
        // y (out) = W (out, in) · x (in) [+ scale · B (out, r) · (A (r, in) · x)]
        func matvec(_ p: Projection?, block: Int, matrix: [Float], out: Int, _ x: [Float]) -> [Float] {
            var y = (0..<out).map { o -> Float in
                var s: Double = 0
                for i in x.indices { s += Double(matrix[o * x.count + i]) * Double(x[i]) }
                return Float(s)
            }
            if let p, let lora, let slot = slots?[block][p] {
                let (A, B, r) = (lora.values[slot.a], lora.values[slot.b], lora.config.rank)
                let ax = (0..<r).map { j -> Double in (0..<x.count).reduce(0) { $0 + Double(A[j * x.count + $1]) * Double(x[$1]) } }
                for o in 0..<out {
                    let delta = (0..<r).reduce(0.0) { $0 + Double(B[o * r + $1]) * ax[$1] }
                    y[o] += Float(Double(lora.config.scale) * delta)
                }
            }
            return y
        }
        // A fused target's pair: s · B (out_fused, r) · (A (r, in) · x), its rows the members' in order, added to
        // the members' outputs `ys` (each already holding its own W·x).
        func addFused(_ p: Projection, block: Int, _ x: [Float], to ys: inout [[Float]]) {
            guard let lora, let slot = slots?[block][p] else { return }
            let (A, B, r) = (lora.values[slot.a], lora.values[slot.b], lora.config.rank)
            let ax = (0..<r).map { j -> Double in (0..<x.count).reduce(0) { $0 + Double(A[j * x.count + $1]) * Double(x[$1]) } }
            var row = 0
            for m in ys.indices {
                for o in ys[m].indices {
                    let delta = (0..<r).reduce(0.0) { $0 + Double(B[(row + o) * r + $1]) * ax[$1] }
                    ys[m][o] += Float(Double(lora.config.scale) * delta)
                }
                row += ys[m].count
            }
        }
        func rmsNorm(_ x: [Float], _ offset: Int) -> [Float] {
            let ms = x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(x.count)
            let r = 1 / (ms + Double(h.rmsEpsilon)).squareRoot()
            return x.indices.map { Float(Double(x[$0]) * r) * weights[offset + $0] }
        }
        // Every head of v normalised on its own with the D weights at `offset` (q/k norm).
        func headNorm(_ v: inout [Float], heads: Int, _ offset: Int?) {
            guard let offset else { return }
            for head in 0..<heads { v.replaceSubrange((head * D)..<((head + 1) * D), with: rmsNorm(Array(v[(head * D)..<((head + 1) * D)]), offset)) }
        }
        // Pairs (2i, 2i + 1) within each head (GGML_ROPE_TYPE_NORM) or (i, i + R/2) (NEOX), angle
        // position · scale · base^(−2i/R) / factorᵢ.
        // Sliding-window blocks: their own base, no factors or scaling.
        func rope(_ v: inout [Float], heads: Int, position: Int, block: Int) {
            let R = h.ropeDimensions
            let local = h.isSlidingWindow(block: block)
            let base = Double(local ? h.architecture.slidingWindowRopeBase : h.ropeBase)
            for head in 0..<heads {
                for i in 0..<(R / 2) {
                    let factor = local ? 1 : Double(ropeFrequencyFactors?[i] ?? 1)
                    let angle = Double(position) * (local ? 1 : Double(h.ropeScale)) * pow(base, -Double(2 * i) / Double(R)) / factor
                    let (first, second) = h.architecture.rotaryPairing == .adjacent ? (head * D + 2 * i, head * D + 2 * i + 1)
                                                                                  : (head * D + i, head * D + i + R / 2)
                    let (a, b) = (Double(v[first]), Double(v[second]))
                    v[first] = Float(a * cos(angle) - b * sin(angle))
                    v[second] = Float(a * sin(angle) + b * cos(angle))
                }
            }
        }
        func addBias(_ y: inout [Float], _ offset: Int?) {
            guard let offset else { return }
            for i in y.indices { y[i] += weights[offset + i] }
        }

        for (position, token) in tokens.enumerated() {
            var x = Array(embeddingValues[(token * C)..<((token + 1) * C)])
            if h.architecture.scaledEmbedding { x = x.map { Float(Double($0) * Double(C).squareRoot()) } }
            for (b, layout) in blocks.enumerated() {
                func project(_ p: Projection, out: Int, _ x: [Float]) -> [Float] {
                    let key = b * Projection.allCases.count + Projection.allCases.firstIndex(of: p)!
                    if matrices[key] == nil { matrices[key] = dequantized(layout.matrix(p)) }
                    return matvec(p, block: b, matrix: matrices[key]!, out: out, x)
                }
                let xn = rmsNorm(x, layout.attentionNorm)
                var q = project(.q, out: h.queryWidth, xn)
                var k = project(.k, out: h.keyValueWidth, xn)
                var v = project(.v, out: h.keyValueWidth, xn)
                var qkv = [q, k, v]
                addFused(.qkv, block: b, xn, to: &qkv)
                (q, k, v) = (qkv[0], qkv[1], qkv[2])
                addBias(&q, layout.qBias)
                addBias(&k, layout.kBias)
                addBias(&v, layout.vBias)
                headNorm(&q, heads: H, layout.qNorm)
                headNorm(&k, heads: h.kvHeadCount, layout.kNorm)
                rope(&q, heads: H, position: position, block: b)
                rope(&k, heads: h.kvHeadCount, position: position, block: b)
                let first = h.isSlidingWindow(block: b) ? max(0, position + 1 - h.slidingWindow!) : 0
                keys[b].append(k)
                values[b].append(v)
                var att = [Float](repeating: 0, count: h.queryWidth)
                for head in 0..<H {
                    let kv = head / (H / h.kvHeadCount)
                    // Causal: position attends to 0…position, all of which are in the cache now.
                    let scores = (first...position).map { j -> Double in
                        (0..<D).reduce(0.0) { $0 + Double(q[head * D + $1]) * Double(keys[b][j][kv * D + $1]) } * Double(h.attentionScale)
                    }
                    let m = scores.max()!
                    let e = scores.map { exp($0 - m) }
                    let z = e.reduce(0, +)
                    for d in 0..<D {
                        att[head * D + d] = Float((first...position).reduce(0.0) { $0 + e[$1 - first] / z * Double(values[b][$1][kv * D + d]) })
                    }
                }
                var o = project(.o, out: C, att)
                if let norm = layout.attentionPostNorm { o = rmsNorm(o, norm) }
                for i in 0..<C { x[i] += o[i] }
                let xn2 = rmsNorm(x, layout.ffnNorm)
                var gateUp = [project(.gate, out: F, xn2), project(.up, out: F, xn2)]
                addFused(.gateUp, block: b, xn2, to: &gateUp)
                let (g, u) = (gateUp[0], gateUp[1])
                let hidden = (0..<F).map { i -> Float in
                    let x = Double(g[i])
                    switch h.architecture.activation {
                    case .silu: return Float(x / (1 + exp(-x)) * Double(u[i]))
                    case .geluTanh: return Float(0.5 * x * (1 + tanh((2 / Double.pi).squareRoot() * (x + 0.044715 * x * x * x))) * Double(u[i]))
                    }
                }
                var d = project(.down, out: C, hidden)
                if let norm = layout.ffnPostNorm { d = rmsNorm(d, norm) }
                for i in 0..<C { x[i] += d[i] }
            }
            let xn = rmsNorm(x, outputNormOffset)
            logits += matvec(nil, block: 0, matrix: outputValues, out: V, xn)
        }
        return logits
    }
}
