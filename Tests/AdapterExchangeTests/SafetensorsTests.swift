import AdaptCore
import Adapters
import Foundation
import Testing

// The safetensors reader and writer PEFT and mlx exports go through: the layout the reference writer produces,
// and the refusals of the reference reader.

@Test func safetensorsWritesTheReferenceLayoutAndReadsItBack() throws {
    let file = Safetensors(metadata: ["format": "pt"], tensors: [
        .init(name: "b", shape: [2, 1], values: [3, 4]),
        .init(name: "a", shape: [1, 2], values: [1, -2.5]),
    ])
    let data = file.encoded()
    let headerLength = Int(data.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) })
    // Padded with spaces to a multiple of 8, so the tensor data is aligned.
    #expect(headerLength % 8 == 0)
    let header = String(decoding: data[8..<(8 + headerLength)], as: UTF8.self)
    #expect(header.hasPrefix(#"{"__metadata__":{"format":"pt"},"a":{"data_offsets":[0,8],"dtype":"F32","shape":[1,2]}"#), "\(header)")
    #expect(data.count == 8 + headerLength + 16)
    // Sorted by name: a's bytes first, little-endian f32.
    #expect(Array(data[(8 + headerLength)..<(8 + headerLength + 4)]) == [0, 0, 0x80, 0x3f])
    let read = try Safetensors(data: data, name: "x.safetensors")
    #expect(read.metadata == ["format": "pt"])
    #expect(read.tensor(named: "a")?.values == [1, -2.5])
    #expect(read.tensor(named: "b")?.shape == [2, 1])
}

@Test func safetensorsReadsHalfPrecisionAndBFloat16() throws {
    let header = #"{"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"g":{"dtype":"BF16","shape":[1],"data_offsets":[4,6]}}"#
    var data = Data()
    withUnsafeBytes(of: UInt64(header.utf8.count).littleEndian) { data.append(contentsOf: $0) }
    data.append(Data(header.utf8))
    data.append(contentsOf: [0x00, 0x3c, 0x00, 0xc0])  // f16 1.0, -2.0
    data.append(contentsOf: [0x40, 0x40])              // bf16 3.0
    let file = try Safetensors(data: data, name: "half.safetensors")
    #expect(file.tensor(named: "h")?.values == [1, -2])
    #expect(file.tensor(named: "g")?.values == [3])
}

@Test func aTruncatedSafetensorsFileIsRefusedAsTruncated() throws {
    let data = Safetensors(metadata: [:], tensors: [.init(name: "a", shape: [4], values: [1, 2, 3, 4])]).encoded()
    for cut in [data.count - 1, data.count - 16, 20, 3] {
        #expect {
            try Safetensors(data: data.prefix(cut), name: "cut.safetensors")
        } throws: { error in
            let text = "\(error)"
            return text.contains("cut.safetensors") && (text.contains("truncated") || text.contains("fewer than the 8"))
        }
    }
}

@Test(arguments: [
    (#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#, 12, "does not start where"),
    (#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#, 8, "offsets that do not match"),
    (#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#, 12, "bytes follow the last tensor"),
    (#"{"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}"#, 8, "other than F32"),
    (#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#, 8, "names a key twice"),
    (#"[1, 2]"#, 0, "not a JSON object"),
])
func aDamagedSafetensorsHeaderIsRefused(header: String, buffer: Int, message: String) throws {
    var data = Data()
    withUnsafeBytes(of: UInt64(header.utf8.count).littleEndian) { data.append(contentsOf: $0) }
    data.append(Data(header.utf8))
    data.append(Data(repeating: 0, count: buffer))
    #expect {
        try Safetensors(data: data, name: "bad.safetensors")
    } throws: { error in "\(error)".contains(message) }
}
