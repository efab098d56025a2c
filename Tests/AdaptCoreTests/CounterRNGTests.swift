import AdaptCore
import Testing

@Test func philoxMatchesTheRandom123KnownAnswers() {
    // Known-answer vectors of Philox4x32-10 from the Random123 distribution (kat_vectors).
    let zero = CounterRNG.philox(counter: (0, 0, 0, 0), key: (0, 0))
    #expect([zero.0, zero.1, zero.2, zero.3] == [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8])
    let ones = CounterRNG.philox(counter: (.max, .max, .max, .max), key: (.max, .max))
    #expect([ones.0, ones.1, ones.2, ones.3] == [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd])
}

@Test func drawsArePureFunctionsOfTheirCoordinates() {
    let rng = CounterRNG(seed: 42)
    let forward = (0..<100).map { rng.uniform(.dropout, step: 3, index: UInt32($0)) }
    let backward = (0..<100).reversed().map { rng.uniform(.dropout, step: 3, index: UInt32($0)) }
    #expect(forward == backward.reversed())
    #expect(rng.uniform(.dropout, step: 3, index: 0) != rng.uniform(.loraInit, step: 3, index: 0))
    #expect(rng.uniform(.dropout, step: 3, index: 0) != CounterRNG(seed: 43).uniform(.dropout, step: 3, index: 0))
}

@Test func normalDrawsHaveUnitMomentsAndPermutationsAreComplete() {
    let rng = CounterRNG(seed: 7)
    let xs = (0..<20_000).map { rng.normal(.test, index: UInt32($0)) }
    let mean = xs.reduce(0, +) / Double(xs.count)
    let variance = xs.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(xs.count)
    #expect(abs(mean) < 0.03)
    #expect(abs(variance - 1) < 0.05)
    let permutation = rng.permutation(1000, .dataOrder, step: 2)
    #expect(permutation.sorted() == Array(0..<1000))
    #expect(permutation == rng.permutation(1000, .dataOrder, step: 2))
    #expect(permutation != rng.permutation(1000, .dataOrder, step: 3))
}
