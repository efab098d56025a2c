import AdaptCore
import Foundation
@testable import Model
import Testing

struct KernelsTests {
    /// The vector exponential against Double's exp of the same f32 difference x − m: within 2.5e-7 relative
    /// (two f32 roundings) on every entry, at most the smallest normal f32 where eˣ⁻ᵐ is below it (the vector
    /// lanes give 0 there), and the sum within 1e-6 relative.
    @Test(arguments: [0, 1, 7, 8, 9, 31, 257, 49_152])
    func shiftedExponentialsMatchDoublePrecision(count: Int) {
        let rng = CounterRNG(seed: 8)
        var x = (0..<count).map { Float(rng.normal(.test, step: UInt64(count), index: UInt32($0)) * 12) }
        // Values whose exponential underflows, including −∞ (a masked score) and the edge of the normal range.
        for (i, value) in [-100, -Float.infinity, -1e30, -87.5, -87.0].enumerated() where i * 3 < count { x[i * 3] = value }
        var y = x
        let (m, sum) = Kernels.exponentiateShifted(&y, count: count)
        guard count > 0 else { #expect(sum == 0); return }
        #expect(m == x.max()!)
        var expected = 0.0
        for (xi, yi) in zip(x, y) {
            let e = Foundation.exp(Double(xi - m))
            expected += e
            if e < Double(Float.leastNormalMagnitude) {
                #expect(Double(yi) <= Double(Float.leastNormalMagnitude), "exp(\(xi) − \(m)) gave \(yi)")
            } else {
                #expect(abs(Double(yi) - e) <= 2.5e-7 * e, "exp(\(xi) − \(m)) gave \(yi), expected \(e)")
            }
        }
        #expect(abs(sum - expected) <= 1e-6 * expected)
    }
}
