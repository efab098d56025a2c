import Foundation

/// The exact null distribution of R+ for n untied, non-zero differences, and the standard normal law.
///
/// The probabilities are built by SciPy's recursion (`scipy.stats._hypotests._get_wilcoxon_distr`): adding
/// observation k shifts half the mass by k. Performing the same floating-point operations in the same order
/// gives the same probabilities bit for bit.
struct WilcoxonNullDistribution: Sendable {
    let n: Int
    /// P(R+ = r) for r = 0 … n(n+1)/2.
    let probabilities: [Double]

    init(n: Int) {
        precondition(n >= 0, "negative sample size")
        self.n = n
        let total = n * (n + 1) / 2
        var c = [Double](repeating: 0, count: total + 1)
        c[0] = 1
        var length = 1  // n(n+1)/2 + 1 for the current k
        if n > 0 {
            for k in 1...n {
                let previous = length
                length = k * (k + 1) / 2 + 1
                // New c[j] = 0.5·old c[j] (j < previous) + 0.5·old c[j−k] (j ≥ k); walking down keeps old c[j−k].
                var j = length - 1
                while j >= 0 {
                    var value = j < previous ? c[j] * 0.5 : 0
                    if j >= k { value += c[j - k] * 0.5 }
                    c[j] = value
                    j -= 1
                }
            }
        }
        probabilities = c
    }

    var mean: Double { Double(n) * Double(n + 1) / 4 }

    private func sum(_ range: Range<Int>) -> Double {
        let lower = max(0, range.lowerBound), upper = min(probabilities.count, range.upperBound)
        guard lower < upper else { return 0 }
        return probabilities.withUnsafeBufferPointer { Self.pairwiseSum($0[lower..<upper]) }
    }

    /// NumPy's pairwise summation (`pairwise_sum` in numpy/_core/src/umath/loops_utils.h.src): eight running
    /// sums over blocks of up to 128 values, halves above that. The far tails come from `1 − (sum of the
    /// rest)`, where the rounding of the sum is the whole answer, so the order must be NumPy's to agree.
    static func pairwiseSum(_ a: Slice<UnsafeBufferPointer<Double>>) -> Double {
        let n = a.count, base = a.startIndex
        if n < 8 {
            var result = 0.0
            for i in a.indices { result += a[i] }
            return result
        }
        if n <= 128 {
            var r = (a[base], a[base + 1], a[base + 2], a[base + 3], a[base + 4], a[base + 5], a[base + 6], a[base + 7])
            var i = 8
            while i < n - n % 8 {
                r.0 += a[base + i]; r.1 += a[base + i + 1]; r.2 += a[base + i + 2]; r.3 += a[base + i + 3]
                r.4 += a[base + i + 4]; r.5 += a[base + i + 5]; r.6 += a[base + i + 6]; r.7 += a[base + i + 7]
                i += 8
            }
            var result = ((r.0 + r.1) + (r.2 + r.3)) + ((r.4 + r.5) + (r.6 + r.7))
            while i < n { result += a[base + i]; i += 1 }
            return result
        }
        var half = n / 2
        half -= half % 8
        return pairwiseSum(a[base..<(base + half)]) + pairwiseSum(a[(base + half)..<a.endIndex])
    }

    /// P(R+ ≤ k); the larger tail is computed as a complement, as SciPy does, so the small tail stays accurate.
    func cdf(_ k: Int) -> Double {
        Double(k) <= mean ? sum(0..<(k + 1)) : 1 - sum((k + 1)..<probabilities.count)
    }

    /// P(R+ ≥ k).
    func sf(_ k: Int) -> Double {
        Double(k) <= mean ? sum(k..<probabilities.count) : 1 - sum(0..<k)
    }
}

/// The standard normal distribution, via the C library's erf/erfc as in Cephes `ndtr` (used by SciPy).
enum StandardNormal {
    static func cdf(_ x: Double) -> Double {
        let t = x * 0.5.squareRoot()
        let z = Swift.abs(t)
        if z < 0.5.squareRoot() { return 0.5 + 0.5 * erf(t) }
        let y = 0.5 * erfc(z)
        return t > 0 ? 1 - y : y
    }

    static func sf(_ x: Double) -> Double { cdf(-x) }
}
