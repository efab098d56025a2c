import AdaptCore
import Foundation
import Model
import Testing
@testable import Training

@Suite struct DataOrderTests {
    @Test func anEpochsOrderIsAPureFunctionOfSeedAndEpoch() {
        let a = DataOrder(count: 50, seed: 9), b = DataOrder(count: 50, seed: 9)
        #expect(a.permutation(epoch: 3) == b.permutation(epoch: 3))
        #expect(a.permutation(epoch: 3) == CounterRNG(seed: 9).permutation(50, .dataOrder, step: 3))
        #expect(a.permutation(epoch: 3) != a.permutation(epoch: 4))
        #expect(a.permutation(epoch: 3) != DataOrder(count: 50, seed: 10).permutation(epoch: 3))
        #expect(a.permutation(epoch: 0).sorted() == Array(0..<50))
    }

    @Test func batchesCrossIntoTheNextEpochAndTheCursorSaysWhere() {
        var order = DataOrder(count: 5, seed: 1)
        var cursor = DataCursor()
        var seen: [Int] = []
        for _ in 0..<4 { seen += order.take(3, from: &cursor) }   // 12 = two epochs and 2
        #expect(cursor == DataCursor(epoch: 2, index: 2))
        #expect(cursor == order.cursor(after: 12))
        #expect(Array(seen[0..<5]) == order.permutation(epoch: 0))
        #expect(Array(seen[5..<10]) == order.permutation(epoch: 1))
        #expect(Array(seen[10..<12]) == Array(order.permutation(epoch: 2).prefix(2)))
    }

    @Test func aRestoredCursorContinuesWithTheSameBatches() {
        var whole = DataOrder(count: 7, seed: 4)
        var cursor = DataCursor()
        let all = (0..<6).map { _ in whole.take(4, from: &cursor) }
        var resumed = DataOrder(count: 7, seed: 4)
        var restored = whole.cursor(after: 12)
        #expect((3..<6).map { _ in resumed.take(4, from: &restored) } == Array(all[3...]))
    }
}
