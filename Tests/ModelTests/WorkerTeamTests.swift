import AdaptCore
import Foundation
@testable import Model
import Synchronization
import Testing

struct WorkerTeamTests {
    @Test(arguments: [1, 2, 3])
    func everyMemberRunsOnceAndTheCallerIsMemberZero(count: Int) {
        let caller = pthread_self()
        let seen = Mutex<[Int: pthread_t]>([:])
        WorkerTeam.with(count: count) { team in
            for _ in 0..<100 {
                seen.withLock { $0 = [:] }
                team.run { member in
                    seen.withLock { $0[member] = pthread_self() }
                }
                #expect(seen.withLock { $0.keys.sorted() } == Array(0..<count))
                #expect(seen.withLock { $0[0] } == caller)
            }
        }
    }

    @Test(arguments: [1, 2, 3, 4])
    func sharesCoverEveryIndexOnceInOrder(count: Int) {
        let team = WorkerTeam(count: count)
        defer { team.finish() }
        for (total, align) in [(0, 1), (1, 1), (7, 1), (255, 1), (256, 16), (1000, 16), (9, 8)] {
            let ranges = (0..<count).map { team.range(total, member: $0, align: align) }
            #expect(ranges.flatMap { Array($0) } == Array(0..<total))
            #expect(ranges.dropLast().allSatisfy { $0.upperBound % align == 0 || $0.upperBound == total })
        }
        for costs in [[Int](), [5], [1, 2, 3, 4], [4, 3, 2, 1, 4, 3, 2, 1, 4], Array(repeating: 1, count: 36)] {
            let parts = (0..<count).map { team.partition(costs: costs, member: $0) }
            #expect(parts.flatMap { Array($0) } == Array(costs.indices))
            // Balanced: no member's share exceeds an equal share by more than one task.
            let total = costs.reduce(0, +)
            for part in parts {
                #expect(part.map { costs[$0] }.reduce(0, +) <= total / count + (costs.max() ?? 0))
            }
        }
    }

    /// Split by columns, by rows, and not split: within rounding of one sgemm (the team only cuts C into blocks).
    @Test func aTeamsSgemmEqualsOneSgemm() {
        let saved = BLAS.threads
        BLAS.threads = 1
        defer { BLAS.threads = saved }
        let rng = CounterRNG(seed: 3)
        func random(_ n: Int, _ step: UInt64) -> [Float] { (0..<n).map { Float(rng.normal(.test, step: step, index: UInt32($0))) } }
        WorkerTeam.with(count: 2) { team in
            for (m, n, k, transposeA, transposeB) in [(200, 300, 64, false, true), (300, 8, 200, true, false), (8, 40, 30, false, false)] {
                let a = random(m * k, 1), b = random(k * n, 2), c0 = random(m * n, 3)
                var expected = c0, actual = c0
                BLAS.sgemm(transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, alpha: 0.5,
                           a: a, b: b, beta: 1, c: &expected)
                team.sgemm(transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, alpha: 0.5,
                           a: a, b: b, beta: 1, c: &actual)
                #expect(maxAbsDifference(expected, actual) <= 1e-5 * expected.map(abs).max()!)
            }
        }
    }
}
