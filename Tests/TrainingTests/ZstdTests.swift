import Foundation
import Testing
import TestSupport
import Training

@Test func zstdRoundTripsAndRejectsGarbage() throws {
    let data = Data((0..<100_000).map { UInt8($0 % 7) })
    let packed = try Zstd.compress(data)
    #expect(packed.count < data.count / 10)
    #expect(try Zstd.decompress(packed) == data)
    #expect(throws: ZstdError.notAFrame) { try Zstd.decompress(Data("not zstd at all".utf8)) }
    #expect(throws: ZstdError.self) { try Zstd.decompress(packed.prefix(packed.count / 2)) }
}

// A frame made to expand without end is refused without its output being made: from the size it declares when it
// declares one, else as soon as the pieces decoded pass the limit.

@Test func aFrameDeclaringMoreThanItsSizeMayHoldIsRefusedBeforeDecoding() {
    let bomb = ZstdBomb.frame(blocks: 15_000, declared: ZstdBomb.output(blocks: 15_000))
    #expect(bomb.count < 61_000)
    #expect(throws: ZstdError.pastLimit(limit: Zstd.sizeAlwaysAllowed, declared: ZstdBomb.output(blocks: 15_000))) {
        try Zstd.decompress(bomb)
    }
}

@Test func aFrameDeclaringNoSizeIsRefusedOnceItsOutputPassesTheLimit() {
    #expect(throws: ZstdError.pastLimit(limit: Zstd.sizeAlwaysAllowed, declared: nil)) {
        try Zstd.decompress(ZstdBomb.frame(blocks: 15_000))
    }
    #expect(throws: ZstdError.pastLimit(limit: 1 << 20, declared: nil)) {
        try Zstd.decompress(ZstdBomb.frame(blocks: 9), limit: 1 << 20)
    }
}

@Test func aFrameDeclaringNoSizeWithinTheLimitDecodesWhole() throws {
    let decoded = try Zstd.decompress(ZstdBomb.frame(blocks: 8), limit: 1 << 20)
    #expect(decoded == Data(repeating: UInt8(ascii: "A"), count: 1 << 20))
}

@Test func framesOneAfterAnotherDecodeToTheirOutputsInOrder() throws {
    let first = Data((0..<70_000).map { UInt8($0 % 13) }), second = Data((0..<50_000).map { UInt8($0 % 5) })
    #expect(try Zstd.decompress(Zstd.compress(first) + Zstd.compress(second)) == first + second)
}
