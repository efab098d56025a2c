import Foundation
import Model
import Testing
import TestSupport

struct GGUFFileTests {
    /// A small file with metadata of every type and one tensor of every supported element type.
    static func sampleWriter() -> GGUFWriter {
        var w = GGUFWriter()
        w.set("general.architecture", string: "llama")
        w.set("test.u8", .uint8(200))
        w.set("test.i8", .int8(-100))
        w.set("test.u16", .uint16(60000))
        w.set("test.i16", .int16(-30000))
        w.set("test.u32", .uint32(4_000_000_000))
        w.set("test.i32", .int32(-2_000_000_000))
        w.set("test.f32", .float32(1.5))
        w.set("test.bool", .bool(true))
        w.set("test.string", .string("héllo ✓"))
        w.set("test.u64", .uint64(1 << 40))
        w.set("test.i64", .int64(-(1 << 40)))
        w.set("test.f64", .float64(-0.125))
        w.set("test.strings", strings: ["a", "", "ü"])
        w.set("test.ints", int32s: [1, -2, 3])
        w.set("test.nested", .array(.array, [.array(.uint8, [.uint8(1), .uint8(2)]), .array(.string, [])]))
        let values = (0..<64).map { Float($0) * 0.25 - 8 }
        for type in [GGMLType.f32, .f16, .bf16, .q8_0, .q4_0, .q4_1] {
            w.addTensor("t.\(type.name)", dimensions: [32, 2], values: values, as: type)
        }
        // Last tensor fills whole alignment units, so any shorter file is missing bytes it needs.
        w.addTensor("t.last", dimensions: [8], values: (0..<8).map(Float.init), as: .f32)
        return w
    }

    static func open(_ bytes: [UInt8], in dir: TemporaryDirectory, name: String = "m.gguf") throws -> GGUFFile {
        let url = dir.file(name)
        try Data(bytes).write(to: url)
        return try GGUFFile(url: url)
    }

    @Test func readsBackEveryMetadataTypeAndTensorTheWriterWrote() throws {
        let dir = TemporaryDirectory()
        let writer = Self.sampleWriter()
        let file = try Self.open(writer.data(), in: dir)
        #expect(file.version == 3)
        #expect(file.metadataKeys == writer.metadata.map(\.key))
        for (key, value) in writer.metadata { #expect(file.metadata[key] == value, "\(key)") }
        #expect(file.int("test.u32") == 4_000_000_000)
        #expect(file.int("test.i64") == -(1 << 40))
        #expect(file.double("test.f32") == 1.5)
        #expect(file.string("test.string") == "héllo ✓")
        #expect(file.stringArray("test.strings") == ["a", "", "ü"])
        #expect(file.intArray("test.ints") == [1, -2, 3])
        #expect(file.tensors.map(\.name) == writer.tensors.map(\.name))
        for t in file.tensors {
            #expect(t.offset % file.alignment == 0)
            let expected = writer.tensors.first { $0.name == t.name }!
            #expect(Array(file.bytes(of: t)) == expected.data)
            #expect(t.dimensions == expected.dimensions)
        }
        let values = (0..<64).map { Float($0) * 0.25 - 8 }   // exact in f32, f16 and bf16
        for type in [GGMLType.f32, .f16, .bf16] {
            #expect(try file.dequantize(file.tensor(named: "t.\(type.name)")!) == values, "\(type.name)")
        }
        #expect(try file.dequantize(file.tensor(named: "t.last")!) == (0..<8).map(Float.init))
    }

    @Test func readsVersion2AndHonoursACustomAlignment() throws {
        let dir = TemporaryDirectory()
        var w = Self.sampleWriter()
        w.version = 2
        w.alignment = 64
        let file = try Self.open(w.data(), in: dir)
        #expect(file.version == 2 && file.alignment == 64)
        #expect(file.tensors.allSatisfy { $0.offset % 64 == 0 })
        #expect(try file.dequantize(file.tensor(named: "t.last")!) == (0..<8).map(Float.init))
    }

    @Test func everyTruncationIsATypedError() throws {
        let dir = TemporaryDirectory()
        let bytes = Self.sampleWriter().data()
        // Every offset in the first 256 bytes (header, counts, first keys), then every 5th byte through the
        // rest of the metadata, the tensor infos and the data, and the last byte.
        for cut in Array(0..<256) + Array(stride(from: 256, to: bytes.count, by: 5)) + [bytes.count - 1] {
            var outcome = "opened"
            do { _ = try Self.open(Array(bytes[0..<cut]), in: dir, name: "cut.gguf") } catch is ModelError { outcome = "typed" } catch { outcome = "\(error)" }
            if outcome != "typed" { Issue.record("cut at \(cut): \(outcome)") }
        }
    }

    @Test func wrongMagicAndUnknownVersionsAreRefused() throws {
        let dir = TemporaryDirectory()
        var bytes = Self.sampleWriter().data()
        bytes[0] = UInt8(ascii: "X")
        #expect(throws: ModelError.badMagic(0x4655_4758)) { _ = try Self.open(bytes, in: dir) }
        for version: UInt32 in [1, 4, 0xFFFF_FFFF] {
            var w = Self.sampleWriter()
            w.version = version
            #expect(throws: ModelError.unsupportedVersion(version)) { _ = try Self.open(w.data(), in: dir) }
        }
    }

    /// Overwrites the u64 at `offset` (little-endian).
    func patch(_ bytes: inout [UInt8], at offset: Int, _ value: UInt64) {
        for i in 0..<8 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * i)) }
    }

    @Test func corruptedCountsAreRefusedWithoutAllocating() throws {
        let dir = TemporaryDirectory()
        let good = Self.sampleWriter().data()
        for (offset, what) in [(8, "tensor count"), (16, "metadata count")] {
            for value: UInt64 in [UInt64.max, 1 << 40, 100_000] {
                var bytes = good
                patch(&bytes, at: offset, value)
                #expect(throws: ModelError.countTooLarge(what: what, count: value, offset: offset)) { _ = try Self.open(bytes, in: dir) }
            }
        }
        // The first key's string length (right after the header) made huge.
        var bytes = good
        patch(&bytes, at: 24, 1 << 62)
        #expect(throws: ModelError.countTooLarge(what: "string length", count: 1 << 62, offset: 24)) { _ = try Self.open(bytes, in: dir) }
    }

    /// A file of one key holding a byte array of `count` elements, every byte present.
    static func byteArrayFile(count: Int) -> [UInt8] {
        var bytes: [UInt8] = Array("GGUF".utf8)
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
        func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
        u32(3); u64(0); u64(1)                              // version, no tensors, one key
        u64(4); bytes.append(contentsOf: Array("huge".utf8))
        u32(9); u32(0); u64(UInt64(count))                  // an array of uint8
        bytes.append(contentsOf: [UInt8](repeating: 0, count: count))
        return bytes
    }

    @Test func aByteArrayTheFileHoldsButMemoryWouldNotIsRefused() throws {
        // Each element is one byte in the file but a 24-byte value in memory: the parser must not reserve
        // 24 × count bytes just because the file is large enough to hold count bytes.
        let dir = TemporaryDirectory()
        let count = (1 << 24) + 1
        #expect(throws: ModelError.metadataTooLarge(key: "huge", count: count, limit: 1 << 24)) {
            _ = try Self.open(Self.byteArrayFile(count: count), in: dir)
        }
        let small = try Self.open(Self.byteArrayFile(count: 1000), in: dir, name: "small.gguf")
        #expect(small.metadata["huge"]?.arrayValue?.count == 1000)
    }

    @Test func aTensorOfAnUnknownTypeIsNamedInTheError() throws {
        let dir = TemporaryDirectory()
        var w = GGUFWriter()
        w.set("general.architecture", string: "llama")
        w.addRawTensor("blk.0.mystery", dimensions: [256], type: 16, data: [UInt8](repeating: 0, count: 66))  // IQ2_XXS
        let error = #expect(throws: ModelError.self) { _ = try Self.open(w.data(), in: dir) }
        #expect(error == .unsupportedTensorType(name: "blk.0.mystery", type: 16))
        let description = error?.description ?? ""
        #expect(description.contains("blk.0.mystery") && description.contains("IQ2_XXS"))
        #expect(description.contains("Q4_K") && description.contains("IQ4_XS"), "the message lists what is supported")
    }

    @Test func aTensorOfAnUnknownTypeIsListedWhenTheFileIsOpenedForInspection() throws {
        let dir = TemporaryDirectory()
        var w = GGUFWriter()
        w.set("general.architecture", string: "llama")
        w.addRawTensor("blk.0.mystery", dimensions: [256, 2], type: 16, data: [UInt8](repeating: 0, count: 132))
        w.addTensor("after", dimensions: [8], values: (0..<8).map(Float.init), as: .f32)
        let url = dir.url.appendingPathComponent("mixed.gguf")
        try w.write(to: url)
        let file = try GGUFFile(url: url, acceptingUnsupportedTensorTypes: true)
        #expect(file.unsupportedTensors == [GGUFUnsupportedTensor(name: "blk.0.mystery", dimensions: [256, 2], rawType: 16)])
        #expect(file.unsupportedTensors.first?.typeName == "IQ2_XXS")
        #expect(try file.dequantize(try #require(file.tensor(named: "after"))) == (0..<8).map(Float.init))
    }

    @Test func aTensorPastTheEndOfTheFileIsRefused() throws {
        let dir = TemporaryDirectory()
        var w = GGUFWriter()
        w.set("general.architecture", string: "llama")
        w.addTensor("a", dimensions: [8], values: [Float](repeating: 1, count: 8), as: .f32)
        let good = w.data()
        // The tensor's relative offset is the last u64 of its info, just before the padding to the data.
        let nameAt = good.indices.first { good[$0] == UInt8(ascii: "a") && good[$0 - 8] == 1 }!
        let offsetAt = nameAt + 1 + 4 + 8 + 4
        for value: UInt64 in [32, 1 << 20, UInt64.max - 7] {
            var bytes = good
            patch(&bytes, at: offsetAt, value)
            #expect(throws: ModelError.tensorOutOfBounds(name: "a")) { _ = try Self.open(bytes, in: dir) }
        }
        #expect(try Self.open(good, in: dir).tensor(named: "a")?.byteCount == 32)
    }

    @Test func aMissingFileIsAnUnreadableFileError() {
        #expect(throws: ModelError.self) { _ = try GGUFFile(url: URL(fileURLWithPath: "/nonexistent/model.gguf")) }
    }

    @Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
    func readsTheDefaultModelsFacts() throws {
        let url = RealModel.path
        let file = try GGUFFile(url: url)
        #expect(file.version == 3)
        #expect(file.string("general.architecture") == "llama")
        #expect(file.int("llama.block_count") == 30)
        #expect(file.int("llama.embedding_length") == 576)
        #expect(file.int("llama.feed_forward_length") == 1536)
        #expect(file.int("llama.attention.head_count") == 9)
        #expect(file.int("llama.attention.head_count_kv") == 3)
        #expect(file.double("llama.rope.freq_base") == 100000)
        #expect(file.stringArray("tokenizer.ggml.tokens")?.count == 49152)
        #expect(file.stringArray("tokenizer.ggml.merges")?.count == 48900)
        let counts = Dictionary(grouping: file.tensors, by: \.type).mapValues(\.count)
        #expect(counts == [.q4_1: 210, .f32: 61, .q8_0: 1])
        #expect(file.tensor(named: "token_embd.weight")?.dimensions == [576, 49152])
        #expect(file.tensor(named: "output.weight") == nil)
    }
}
