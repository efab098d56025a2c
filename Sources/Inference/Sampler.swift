import AdaptCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Chooses the next token from a vector of logits.
///
/// The chain runs in llama.cpp's default order (`common_params_sampling::samplers`), leaving out the samplers
/// we do not offer (DRY, top-n-σ, typical-p, XTC):
///
///     penalties → top-k → top-p → min-p → temperature → draw
///
/// so top-p and min-p see the probabilities at temperature 1, exactly as in llama.cpp. Greedy (temperature
/// ≤ 0) applies the penalties and takes the most likely token. The draw is the inverse CDF of one uniform
/// number from `CounterRNG(seed)` with purpose `.generation`, step = the position of the token being chosen,
/// walking the candidates from most to least likely; ties between equal logits go to the lower id.
public struct Sampler: Sendable {
    public let options: SamplingOptions
    let rng: CounterRNG

    public init(_ options: SamplingOptions) {
        self.options = options
        self.rng = CounterRNG(seed: options.seed)
    }

    /// One token that survived filtering, with its probability after temperature.
    public struct Candidate: Sendable, Equatable {
        public let id: Int32
        public let logit: Float
        public var probability: Float
    }

    /// The next token for the sequence position `position`, given the logits `(V)` and the tokens before it.
    public func sample(_ logits: [Float], history: ArraySlice<Int32>, position: Int) -> Int32 {
        if options.isGreedy {
            var scores = logits
            applyPenalties(&scores, history: history)
            return Self.argmax(scores)
        }
        let candidates = distribution(logits, history: history)
        let u = Float(rng.uniform(.generation, step: UInt64(max(0, position)), index: 0))
        var cumulative: Float = 0
        for candidate in candidates {
            cumulative += candidate.probability
            if u < cumulative { return candidate.id }
        }
        // Rounding left the sum a hair below u: the least likely survivor is the right answer.
        return candidates[candidates.count - 1].id
    }

    /// The candidates a draw chooses from, most likely first, probabilities summing to 1.
    /// Greedy gives the single most likely token with probability 1.
    public func distribution(_ logits: [Float], history: ArraySlice<Int32>) -> [Candidate] {
        precondition(!logits.isEmpty, "logits must not be empty")
        var scores = logits
        applyPenalties(&scores, history: history)
        if options.isGreedy {
            let id = Self.argmax(scores)
            return [Candidate(id: id, logit: scores[Int(id)], probability: 1)]
        }
        var candidates = Self.topK(scores, k: options.topK)
        if options.topP < 1 { candidates = Self.topP(candidates, p: options.topP) }
        if options.minP > 0 { candidates = Self.minP(candidates, p: options.minP) }
        Self.softmax(&candidates, temperature: options.temperature)
        return candidates
    }

    /// Repetition, presence and frequency penalties over the last `penaltyWindow` tokens of `history`.
    public func applyPenalties(_ logits: inout [Float], history: ArraySlice<Int32>) {
        guard options.penaltiesActive, !history.isEmpty else { return }
        var counts: [Int32: Int] = [:]
        for token in history.suffix(options.penaltyWindow) where token >= 0 && Int(token) < logits.count {
            counts[token, default: 0] += 1
        }
        // Each token is penalised once whatever the dictionary's order, so the order cannot reach a number.
        for (token, count) in counts {
            var logit = logits[Int(token)]
            logit = logit <= 0 ? logit * options.repeatPenalty : logit / options.repeatPenalty
            logit -= Float(count) * options.frequencyPenalty + options.presencePenalty
            logits[Int(token)] = logit
        }
    }

    /// The index of the largest logit; the lowest index among equals.
    public static func argmax(_ logits: [Float]) -> Int32 {
        var best = 0
        var bestValue = -Float.infinity
        for (i, value) in logits.enumerated() where value > bestValue {
            best = i
            bestValue = value
        }
        return Int32(best)
    }

    /// Sorted by logit, highest first, lower id first among equals.
    static func before(_ a: Candidate, _ b: Candidate) -> Bool {
        a.logit != b.logit ? a.logit > b.logit : a.id < b.id
    }

    /// The `k` highest logits, sorted; k ≤ 0 keeps and sorts them all.
    static func topK(_ logits: [Float], k: Int) -> [Candidate] {
        if k <= 0 || k >= logits.count {
            return logits.enumerated().map { Candidate(id: Int32($0.offset), logit: $0.element, probability: 0) }
                .sorted(by: before)
        }
        // A min-heap of the best k seen so far: one comparison per logit in the common case, so a 49k
        // vocabulary costs a single pass instead of a full sort.
        var heap: [Candidate] = []
        heap.reserveCapacity(k)
        for (i, logit) in logits.enumerated() {
            let candidate = Candidate(id: Int32(i), logit: logit, probability: 0)
            if heap.count < k {
                heap.append(candidate)
                siftUp(&heap, heap.count - 1)
            } else if before(candidate, heap[0]) {
                heap[0] = candidate
                siftDown(&heap, 0)
            }
        }
        return heap.sorted(by: before)
    }

    // The heap's root is the worst kept candidate: the one every other candidate sorts `before`.
    private static func siftUp(_ heap: inout [Candidate], _ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard before(heap[parent], heap[child]) else { return }
            heap.swapAt(parent, child)
            child = parent
        }
    }

    private static func siftDown(_ heap: inout [Candidate], _ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1, right = left + 1
            var worst = parent
            if left < heap.count, before(heap[worst], heap[left]) { worst = left }
            if right < heap.count, before(heap[worst], heap[right]) { worst = right }
            if worst == parent { return }
            heap.swapAt(parent, worst)
            parent = worst
        }
    }

    /// Nucleus sampling (Holtzman et al. 2019): the shortest prefix whose probability mass reaches `p`.
    static func topP(_ sorted: [Candidate], p: Float) -> [Candidate] {
        var probabilities = sorted
        softmax(&probabilities, temperature: 1)
        var cumulative: Float = 0
        for (i, candidate) in probabilities.enumerated() {
            cumulative += candidate.probability
            if cumulative >= p { return Array(sorted.prefix(i + 1)) }
        }
        return sorted
    }

    /// Keeps the candidates whose probability is at least `p` times the largest; on logits that is
    /// `logit ≥ max + ln p`, which needs no normalisation.
    static func minP(_ sorted: [Candidate], p: Float) -> [Candidate] {
        guard let top = sorted.first else { return sorted }
        let threshold = top.logit + logf(p)
        let kept = sorted.prefix { $0.logit >= threshold }
        return kept.isEmpty ? [top] : Array(kept)
    }

    /// Fills in probabilities: softmax of logit / temperature, computed from the largest logit for stability.
    static func softmax(_ candidates: inout [Candidate], temperature: Float) {
        guard let maxLogit = candidates.map(\.logit).max() else { return }
        var sum: Float = 0
        for i in candidates.indices {
            let weight = expf((candidates[i].logit - maxLogit) / temperature)
            candidates[i].probability = weight
            sum += weight
        }
        for i in candidates.indices { candidates[i].probability /= sum }
    }
}
