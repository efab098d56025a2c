import Foundation

extension LlamaModel {
    /// Teacher-forced log-probabilities (natural log) of each completion token given everything before it.
    ///
    /// Prompt and completion are token ids produced separately and concatenated (the boundary training uses).
    /// Completion token i is predicted from position |prompt| + i − 1, so with an empty prompt the first
    /// completion token has no context and is not scored: the result then has one value fewer.
    public func logProbabilities(of completion: [Int], after prompt: [Int], lora: LoRAParameters? = nil) -> [Double] {
        let tokens = prompt + completion
        let first = max(prompt.count, 1)          // index in `tokens` of the first scored token
        guard tokens.count > first else { return [] }
        var cache = KVCache()
        let rows = Array((first - 1)..<(tokens.count - 1))
        let logits = BLAS.withThreadCount {
            // The last token is only predicted, never fed.
            let pass = run(tokens: Array(tokens.dropLast()), lora: lora, cache: &cache, record: false, dropout: nil)
            return self.logits(pass, rows: rows)     // (n, V)
        }
        let V = hyperparameters.vocabularySize
        return rows.indices.map { i in
            let row = logits[(i * V)..<((i + 1) * V)]
            return Self.logSoftmax(row, at: tokens[rows[i] + 1])
        }
    }

    /// The weighted mean cross-entropy of a batch without gradients or dropout (held-out loss): the value
    /// `lossAndGradients` reports with dropout 0, at a forward pass's cost.
    public func loss(_ batch: [TrainingSequence], lora: LoRAParameters? = nil) -> (loss: Double, weightSum: Double) {
        BLAS.withThreadCount {
            var lossSum = 0.0, weightSum = 0.0
            let V = hyperparameters.vocabularySize
            for sequence in batch {
                let rows = sequence.weights.indices.filter { sequence.weights[$0] != 0 }
                guard !rows.isEmpty else { continue }
                var cache = KVCache()
                let pass = run(tokens: Array(sequence.tokens.dropLast()), lora: lora, cache: &cache, record: false, dropout: nil, f32Only: true)
                let logits = logits(pass, rows: rows, fromQuantized: false)   // (n, V)
                for (i, t) in rows.enumerated() {
                    let w = Double(sequence.weights[t])
                    lossSum -= w * Self.logSoftmax(logits[(i * V)..<((i + 1) * V)], at: sequence.tokens[t + 1])
                    weightSum += w
                }
            }
            return (weightSum > 0 ? lossSum / weightSum : 0, weightSum)
        }
    }

    /// log softmax(row)[index], in Double.
    static func logSoftmax(_ row: ArraySlice<Float>, at index: Int) -> Double {
        let m = Double(row.max()!)
        let z = row.reduce(0.0) { $0 + exp(Double($1) - m) }
        return Double(row[row.startIndex + index]) - m - log(z)
    }

    /// The `k` largest entries of `logits` as (id, logit), largest first; ties go to the smaller id.
    public static func top(_ k: Int, of logits: [Float]) -> [(id: Int, logit: Float)] {
        let k = min(max(0, k), logits.count)
        guard k > 0 else { return [] }
        func before(_ a: Int, _ b: Int) -> Bool { logits[a] > logits[b] || (logits[a] == logits[b] && a < b) }
        if k > 64 {
            return logits.indices.sorted(by: before).prefix(k).map { ($0, logits[$0]) }
        }
        // One pass keeping the best k in order: O(V·k) with k small, no sort of the whole vocabulary.
        var best: [Int] = []
        best.reserveCapacity(k + 1)
        for i in logits.indices {
            if best.count == k, !before(i, best[k - 1]) { continue }
            var j = best.count
            while j > 0, before(i, best[j - 1]) { j -= 1 }
            best.insert(i, at: j)
            if best.count > k { best.removeLast() }
        }
        return best.map { ($0, logits[$0]) }
    }
}
