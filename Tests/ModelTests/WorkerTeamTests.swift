import AdaptCore
import Foundation
@testable import Model
import Testing

struct WorkerTeamTests {
    @Test func aThreadTheSystemRefusesIsAnErrorAndTheStartedMembersAreJoined() throws {
        let asked = Locked<[Int]>([])
        do {
            _ = try WorkerTeam(count: 4) { member in
                asked.withLock { $0.append(member) }
                return member < 3
            }
            Issue.record("a refused thread must be an error")
        } catch let ModelError.threadsUnavailable(requested, started, _) {
            #expect(requested == 4 && started == 3)
        }
        #expect(asked.withLock { $0 } == [1, 2, 3])
        let message = ModelError.threadsUnavailable(requested: 4, started: 3, reason: "Resource temporarily unavailable").description
        #expect(message.contains("pass fewer --threads"))
        // The members that did start were stopped and joined: a new team of the same size still works.
        let sum = Locked(0)
        try WorkerTeam.with(count: 4) { team in team.run { member in sum.withLock { $0 += member } } }
        #expect(sum.withLock { $0 } == 6)
    }

    @Test(arguments: [1, 2, 3])
    func everyMemberRunsOnceAndTheCallerIsMemberZero(count: Int) throws {
        let caller = pthread_self()
        let seen = Locked<[Int: pthread_t]>([:])
        try WorkerTeam.with(count: count) { team in
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

    @Test func piecesCoverEveryIndexOnceInOrderOnAlignedBoundaries() {
        for parts in 1...5 {
            for (total, align) in [(0, 1), (1, 1), (7, 1), (255, 1), (256, 16), (1000, 16), (9, 8)] {
                let pieces = (0..<parts).map { WorkerTeam.piece(total, $0, of: parts, align: align) }
                #expect(pieces.flatMap { Array($0) } == Array(0..<total))
                #expect(pieces.dropLast().allSatisfy { $0.upperBound % align == 0 || $0.upperBound == total })
            }
        }
    }

    @Test(arguments: [1, 2, 3])
    func everyTaskAndEveryPieceRunsExactlyOnce(count: Int) throws {
        try WorkerTeam.with(count: count) { team in
            for tasks in [0, 1, 2, 5, 36, 1000] {
                let runs = Locked<[Int]>([])
                team.forEachTask(tasks) { task in runs.withLock { $0.append(task) } }
                #expect(runs.withLock { $0.sorted() } == Array(0..<tasks))
            }
            for (total, align, minimum) in [(0, 1, 1), (3, 1, 1), (256, 1, 8), (393_216, 16, 4096), (576, 16, 64)] {
                let pieces = Locked<[Range<Int>]>([])
                team.forEachRange(total, align: align, minimum: minimum) { range in pieces.withLock { $0.append(range) } }
                let sorted = pieces.withLock { $0.sorted { $0.lowerBound < $1.lowerBound } }
                #expect(sorted.flatMap { Array($0) } == Array(0..<total))
                if count == 1 { #expect(sorted.count == min(1, total)) }   // a team of one never cuts
            }
        }
    }

    /// Split by columns, by rows, and not split: within rounding of one sgemm (the team only cuts C into blocks).
    @Test func aTeamsSgemmEqualsOneSgemm() throws {
        let rng = CounterRNG(seed: 3)
        func random(_ n: Int, _ step: UInt64) -> [Float] { (0..<n).map { Float(rng.normal(.test, step: step, index: UInt32($0))) } }
        try WorkerTeam.with(count: 2) { team in
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
