/// The ranks of |d| and the moments of R+ under the null, computed the way SciPy 1.17's
/// `_wilcoxon._wilcoxon_statistic` does (so p-values agree to rounding).
///
/// Ranking: `|d|` is sorted stably; equal magnitudes share their average rank; tie groups are counted in
/// sorted order, so a group of zeros (the smallest magnitudes) is always the first group.
struct SignedRanks: Sendable {
    /// The differences that were ranked (zeros removed under `wilcox`), in input order.
    let ranked: [Double]
    /// Average ranks of `|ranked|`, in input order.
    let ranks: [Double]
    /// Sizes of the groups of equal magnitudes, smallest magnitude first.
    let tieGroups: [Int]
    let zeros: Int
    let rankSumPositive: Double
    let rankSumNegative: Double
    /// Mean and standard deviation of R+ under the null (with tie and, for `pratt`, zero adjustments).
    let mean: Double
    let standardDeviation: Double

    var count: Int { ranked.count }
    /// True when two ranked magnitudes are equal (SciPy's `has_ties`).
    var hasTies: Bool { tieGroups.count < ranked.count }

    init(differences d: [Double], zeroMethod: ZeroMethod) {
        zeros = d.reduce(0) { $0 + ($1 == 0 ? 1 : 0) }
        ranked = zeroMethod == .wilcox ? d.filter { $0 != 0 } : d
        let magnitudes = ranked.map { Swift.abs($0) }
        // A stable sort by magnitude; the index breaks ties so equal magnitudes keep their input order.
        let order = magnitudes.indices.sorted { (magnitudes[$0], $0) < (magnitudes[$1], $1) }
        var ranks = [Double](repeating: 0, count: ranked.count)
        var groups: [Int] = []
        var start = 0
        while start < order.count {
            var end = start + 1
            while end < order.count && magnitudes[order[end]] == magnitudes[order[start]] { end += 1 }
            // Ordinal ranks start..end-1 are 1-based start+1...end; their average is (start+1) + (count-1)/2.
            let average = Double(start + 1) + Double(end - start - 1) / 2
            for position in start..<end { ranks[order[position]] = average }
            groups.append(end - start)
            start = end
        }
        self.ranks = ranks
        var plus = 0.0, minus = 0.0, zeroRanks = 0.0
        for (value, rank) in zip(ranked, ranks) {
            if value > 0 { plus += rank } else if value < 0 { minus += rank } else { zeroRanks += rank }
        }
        if zeroMethod == .zsplit {
            plus += zeroRanks / 2
            minus += zeroRanks / 2
        }
        rankSumPositive = plus
        rankSumNegative = minus

        let n = Double(ranked.count)
        var mean = n * (n + 1) * 0.25
        var variance24 = n * (n + 1) * (2 * n + 1)
        var tieGroups = groups
        if zeroMethod == .pratt {
            // Cureton (1967): remove the zeros' share of the mean and variance; zeros are not a tie group.
            let z = Double(zeros)
            mean -= z * (z + 1) * 0.25
            variance24 -= z * (z + 1) * (2 * z + 1)
            if zeros > 0 { tieGroups[0] = 0 }
        }
        let tieCorrection = tieGroups.reduce(0.0) { let t = Double($1); return $0 + (t * t * t - t) }
        self.mean = mean
        standardDeviation = ((variance24 - tieCorrection / 2) / 24).squareRoot()
        self.tieGroups = groups
    }

    /// R+ when each ranked difference's sign is chosen by a bit of `mask` (bit set: positive), as SciPy's
    /// permutation test recomputes it; zeros stay zero (−0 is not positive), and under `zsplit` they keep
    /// contributing half their ranks.
    func rankSumPositive(flipping mask: Int, zeroMethod: ZeroMethod) -> Double {
        var plus = 0.0, zeroRanks = 0.0
        for index in ranked.indices {
            let value = ranked[index]
            if value == 0 { zeroRanks += ranks[index]; continue }
            let flipped = (mask >> index) & 1 == 1 ? -value : value
            if flipped > 0 { plus += ranks[index] }
        }
        return zeroMethod == .zsplit ? plus + zeroRanks / 2 : plus
    }
}

/// NumPy's median: the middle value, or the mean of the two middle values.
func median(_ values: [Double]) -> Double {
    precondition(!values.isEmpty, "median of nothing")
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
