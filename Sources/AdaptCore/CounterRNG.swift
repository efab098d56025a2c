/// A counter-based random number generator (Philox4x32-10, Salmon et al., SC'11).
///
/// Every random number is a pure function of (seed, purpose, step, index): there is no hidden state to save,
/// so a resumed or replayed run draws exactly the numbers the original drew, in any order.
public struct CounterRNG: Sendable, Equatable {
    /// Separates the streams of different uses of randomness under one seed.
    public enum Purpose: UInt32, Sendable {
        case loraInit = 1, dropout, dataOrder, sampling, retryJitter, datasetSample, generation, heldOut, test, noopFailure
    }

    public let seed: UInt64

    public init(seed: UInt64) { self.seed = seed }

    /// Four independent 32-bit words for one counter value.
    public func block(_ purpose: Purpose, step: UInt64, index: UInt32) -> (UInt32, UInt32, UInt32, UInt32) {
        Self.philox(counter: (UInt32(truncatingIfNeeded: step), UInt32(truncatingIfNeeded: step >> 32), purpose.rawValue, index),
                    key: (UInt32(truncatingIfNeeded: seed), UInt32(truncatingIfNeeded: seed >> 32)))
    }

    /// The Philox4x32-10 bijection itself.
    public static func philox(counter: (UInt32, UInt32, UInt32, UInt32), key: (UInt32, UInt32)) -> (UInt32, UInt32, UInt32, UInt32) {
        var c = counter
        var k = key
        for _ in 0..<10 {
            let p0 = UInt64(0xD251_1F53) &* UInt64(c.0)
            let p1 = UInt64(0xCD9E_8D57) &* UInt64(c.2)
            c = (UInt32(truncatingIfNeeded: p1 >> 32) ^ c.1 ^ k.0, UInt32(truncatingIfNeeded: p1),
                 UInt32(truncatingIfNeeded: p0 >> 32) ^ c.3 ^ k.1, UInt32(truncatingIfNeeded: p0))
            k = (k.0 &+ 0x9E37_79B9, k.1 &+ 0xBB67_AE85)
        }
        return c
    }

    public func uint64(_ purpose: Purpose, step: UInt64 = 0, index: UInt32) -> UInt64 {
        let b = block(purpose, step: step, index: index)
        return UInt64(b.0) << 32 | UInt64(b.1)
    }

    /// Uniform in [0, 1) with 53 random bits.
    public func uniform(_ purpose: Purpose, step: UInt64 = 0, index: UInt32) -> Double {
        Double(uint64(purpose, step: step, index: index) >> 11) * 0x1.0p-53
    }

    /// Standard normal by Box–Muller over one counter block (the second value is discarded on purpose,
    /// so value `index` never depends on how many were drawn before it).
    public func normal(_ purpose: Purpose, step: UInt64 = 0, index: UInt32) -> Double {
        let b = block(purpose, step: step, index: index)
        let u1 = (Double(UInt64(b.0) << 21 | UInt64(b.1 >> 11)) + 1) * 0x1.0p-53  // (0, 1]
        let u2 = Double(UInt64(b.2) << 21 | UInt64(b.3 >> 11)) * 0x1.0p-53        // [0, 1)
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }

    /// Uniform integer in 0..<bound without modulo bias (Lemire's method, retried on a fresh index stream).
    public func below(_ bound: UInt64, _ purpose: Purpose, step: UInt64 = 0, index: UInt32) -> UInt64 {
        precondition(bound > 0, "bound must be positive")
        var attempt: UInt64 = 0
        while true {
            let x = uint64(purpose, step: step &+ (attempt << 40), index: index)
            let m = x.multipliedFullWidth(by: bound)
            if m.low >= (0 &- bound) % bound { return m.high }
            attempt += 1
        }
    }

    /// A permutation of 0..<count as a pure function of (seed, purpose, step): Fisher–Yates with one
    /// counter index per swap.
    public func permutation(_ count: Int, _ purpose: Purpose, step: UInt64) -> [Int] {
        var order = Array(0..<count)
        guard count > 1 else { return order }
        for i in stride(from: count - 1, to: 0, by: -1) {
            let j = Int(below(UInt64(i + 1), purpose, step: step, index: UInt32(truncatingIfNeeded: i)))
            order.swapAt(i, j)
        }
        return order
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
