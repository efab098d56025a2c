import Foundation
import Model
import Testing

/// Random blocks of every type added beside the first six, dequantized by the `gguf` package's numpy code
/// (scripts/fixtures/dequantize_reference.py): ours must give the same f32 bits, block by block.
struct DequantizeReferenceTests {
    struct Case: Decodable {
        let type: String
        let id: UInt32
        let blocks: Int
        let data: String
        let values: String
    }

    struct Document: Decodable {
        let generator: String
        let cases: [Case]
    }

    static let document: Document? = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/dequantize_reference.json")
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONDecoder().decode(Document.self, from: data)
    }()

    @Test func theFixtureCoversEveryTypeBeyondTheFirstSix() throws {
        let document = try #require(Self.document)
        let covered = Set(document.cases.compactMap { GGMLType(rawValue: $0.id) })
        let firstSix: Set<GGMLType> = [.f32, .f16, .bf16, .q8_0, .q4_0, .q4_1]
        #expect(covered == Set(GGMLType.allCases).subtracting(firstSix))
        for item in document.cases { #expect(GGMLType(rawValue: item.id)?.name == item.type) }
    }

    @Test(arguments: ["Q5_0", "Q5_1", "IQ4_NL", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS"])
    func everyBlockDequantizesToTheReferenceBits(typeName: String) throws {
        let item = try #require(Self.document?.cases.first { $0.type == typeName })
        let type = try #require(GGMLType(rawValue: item.id))
        let data = try #require(Data(base64Encoded: item.data))
        let expectedBytes = try #require(Data(base64Encoded: item.values))
        #expect(data.count == item.blocks * type.blockBytes)
        let expected: [UInt32] = expectedBytes.withUnsafeBytes { raw in
            (0..<(raw.count / 4)).map { UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self)) }
        }
        #expect(expected.count == item.blocks * type.blockSize)
        let values = data.withUnsafeBytes { Dequantize.toFloat($0, type: type, count: expected.count) }
        var wrongBlocks: [Int] = []
        for block in 0..<item.blocks {
            let range = (block * type.blockSize)..<((block + 1) * type.blockSize)
            if range.contains(where: { values[$0].bitPattern != expected[$0] }) { wrongBlocks.append(block) }
        }
        #expect(wrongBlocks.isEmpty, "\(typeName): blocks \(wrongBlocks) differ from gguf's dequantizer")
        // The fixture's extreme scales must really be there, or the comparison proves less than it says.
        #expect(values.contains { abs($0) > 1e6 } && values.contains { $0 == 0 })
    }
}
