import Foundation

// Shapes use the legend at the top of LlamaModel.swift.
//
// Causal attention of a recorded (training) pass, in blocks of `attentionBlockRows` query rows: the block of
// rows r0..<r1 only sees keys 0..<P + r1, so its products skip the masked columns beyond (about 3/8 of the
// score work at T = 256 with blocks of 64). Every task writes its own rows (forward, query side of the
// backward) or its own keys (key side of the backward), so the tasks are spread across a team without any
// sum crossing two tasks: the result does not depend on the team's size or on scheduling.

extension LlamaModel {
    /// Query rows per attention block: large enough for efficient products, small enough to skip most of the mask.
    static let attentionBlockRows = 64

    /// att (T, Cq) and probs (H, T, S) of `a` from its q (T, Cq), the keys and values (S, Ckv) of the cache.
    /// Entries of probs right of a block's last visible key are not written; the backward never reads them.
    func causalAttention(_ a: BlockActivations, keys K: UnsafePointer<Float>, values V: UnsafePointer<Float>,
                         tokens T: Int, cached P: Int, window: Int? = nil, team: WorkerTeam) {
        causalAttention(a, keys: K, values: V, tokens: T, cached: P, window: window) { team.forEachTask($0, $1) }
    }

    /// The same with the (head, block) tasks handed to `forEachTask` (a prompt of inference gives them to the
    /// decode team).
    func causalAttention(_ a: BlockActivations, keys K: UnsafePointer<Float>, values V: UnsafePointer<Float>,
                         tokens T: Int, cached P: Int, window: Int?, forEachTask: (Int, (Int) -> Void) -> Void) {
        let h = hyperparameters
        let (H, D, Cq, Ckv) = (h.headCount, h.headDimension, h.queryWidth, h.keyValueWidth)
        let S = P + T, group = H / h.kvHeadCount
        let scale = h.attentionScale
        let rowsPerBlock = Self.attentionBlockRows, blockCount = (T + rowsPerBlock - 1) / rowsPerBlock
        // Tasks (head, block), the last blocks (which read the most keys) first.
        forEachTask(H * blockCount) { task in
            let head = task % H, kv = head / group
            let r0 = (blockCount - 1 - task / H) * rowsPerBlock, r1 = min(T, r0 + rowsPerBlock)
            let visible = P + r1
            let scores = a.probs.pointer + head * T * S + r0 * S          // rows r0..<r1 of (T, S)
            BLAS.sgemm(transposeB: true, m: r1 - r0, n: visible, k: D, alpha: scale,
                       a: a.q.pointer + r0 * Cq + head * D, lda: Cq, b: K + kv * D, ldb: Ckv, c: scores, ldc: S)
            Kernels.maskedSoftmax(scores, rows: r1 - r0, width: visible, stride: S, window: window) { P + r0 + $0 + 1 }
            BLAS.sgemm(m: r1 - r0, n: D, k: visible, a: scores, lda: S, b: V + kv * D, ldb: Ckv,
                       c: a.att.pointer + r0 * Cq + head * D, ldc: Cq)
        }
    }

    /// Backward of `causalAttention` for a pass without cache (S = T): given dAtt (T, Cq), writes dq (T, Cq),
    /// dk and dv (T, Ckv); `dScores` (H, T, T) is a workspace.
    ///
    /// First, per (head, query block): dP = dAttₕ·Vᵀ, the softmax backward dS = P ⊙ (dP − Σⱼ Pⱼ·dPⱼ), and
    /// dqₕ = dS·K/√D. Then, per (key-value head, key block c0..<c1): the rows c0..<T that see those keys give
    /// dK = Σₕ dSₕᵀ·qₕ/√D and dV = Σₕ Pₕᵀ·dAttₕ over the group's query heads, in head order.
    func causalAttentionBackward(_ a: BlockActivations, dAtt: UnsafePointer<Float>, dScores: UnsafeMutablePointer<Float>,
                                 dq: UnsafeMutablePointer<Float>, dk: UnsafeMutablePointer<Float>, dv: UnsafeMutablePointer<Float>,
                                 tokens T: Int, team: WorkerTeam) {
        let h = hyperparameters
        let (H, G, D, Cq, Ckv) = (h.headCount, h.kvHeadCount, h.headDimension, h.queryWidth, h.keyValueWidth)
        let group = H / G
        let scale = h.attentionScale
        let rowsPerBlock = Self.attentionBlockRows, blockCount = (T + rowsPerBlock - 1) / rowsPerBlock
        let (q, k, v, probs) = (a.q.pointer, a.k.pointer, a.v.pointer, a.probs.pointer)

        // Tasks (head, query block), the last blocks first; then (key-value head, key block), the first first.
        team.forEachTask(H * blockCount) { task in
            let head = task % H, kv = head / group
            let r0 = (blockCount - 1 - task / H) * rowsPerBlock, r1 = min(T, r0 + rowsPerBlock)
            let p = probs + head * T * T + r0 * T, dS = dScores + head * T * T + r0 * T   // rows r0..<r1, keys 0..<r1
            BLAS.sgemm(transposeB: true, m: r1 - r0, n: r1, k: D, a: dAtt + r0 * Cq + head * D, lda: Cq,
                       b: v + kv * D, ldb: Ckv, c: dS, ldc: T)
            // Masked entries (j > t, or outside a sliding window) have P = 0 and become dS = 0, which the key side reads.
            for i in 0..<(r1 - r0) {
                let t = r0 + i, pr = p + i * T, d = dS + i * T
                var dot: Float = 0
                for j in 0...t { dot += pr[j] * d[j] }
                for j in 0...t { d[j] = pr[j] * (d[j] - dot) }
                for j in (t + 1)..<max(t + 1, r1) { d[j] = 0 }
            }
            BLAS.sgemm(m: r1 - r0, n: D, k: r1, alpha: scale, a: dS, lda: T, b: k + kv * D, ldb: Ckv,
                       c: dq + r0 * Cq + head * D, ldc: Cq)
        }
        team.forEachTask(G * blockCount) { task in
            let kv = task % G
            let c0 = (task / G) * rowsPerBlock, c1 = min(T, c0 + rowsPerBlock)
            for head in (kv * group)..<((kv + 1) * group) {
                let first = head == kv * group
                BLAS.sgemm(transposeA: true, m: c1 - c0, n: D, k: T - c0, alpha: scale,
                           a: dScores + head * T * T + c0 * T + c0, lda: T, b: q + c0 * Cq + head * D, ldb: Cq,
                           beta: first ? 0 : 1, c: dk + c0 * Ckv + kv * D, ldc: Ckv)
                BLAS.sgemm(transposeA: true, m: c1 - c0, n: D, k: T - c0,
                           a: probs + head * T * T + c0 * T + c0, lda: T, b: dAtt + c0 * Cq + head * D, ldb: Cq,
                           beta: first ? 0 : 1, c: dv + c0 * Ckv + kv * D, ldc: Ckv)
            }
        }
    }
}
