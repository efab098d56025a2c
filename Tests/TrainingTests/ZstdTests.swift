import Foundation
import Testing
import Training

@Test func zstdRoundTripsAndRejectsGarbage() throws {
    let data = Data((0..<100_000).map { UInt8($0 % 7) })
    let packed = try Zstd.compress(data)
    #expect(packed.count < data.count / 10)
    #expect(try Zstd.decompress(packed) == data)
    #expect(throws: TrainingError.self) { try Zstd.decompress(Data("not zstd at all".utf8)) }
    #expect(throws: TrainingError.self) { try Zstd.decompress(packed.prefix(packed.count / 2)) }
}
