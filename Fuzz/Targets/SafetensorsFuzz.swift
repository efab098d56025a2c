import Adapters
import Foundation

/// safetensors files (PEFT and mlx-lm weights): header length, JSON header, tensor bytes. What the reader accepts
/// must write back and read back to the same names, shapes and bits.
public enum SafetensorsFuzz: FuzzTarget {
    public static let name = "safetensors"

    public static func run(_ data: Data) {
        guard let file = try? Safetensors(data: data, name: "fuzz.safetensors") else { return }
        guard let again = try? Safetensors(data: file.encoded(), name: "again.safetensors") else {
            FuzzFinding.fail(name, "a file the reader accepts does not read back from its own encoding")
        }
        let sorted = file.tensors.sorted { $0.name < $1.name }
        guard again.metadata == file.metadata, again.tensors.count == sorted.count,
              zip(again.tensors.sorted { $0.name < $1.name }, sorted).allSatisfy({ a, b in
                  a.name == b.name && a.shape == b.shape && a.values.map(\.bitPattern) == b.values.map(\.bitPattern)
              }) else {
            FuzzFinding.fail(name, "a file the reader accepts reads back different after writing")
        }
    }

    public static func seeds() throws -> [Data] {
        let peft = try PEFTFormat.files(FuzzBase.adapter(rank: 1), base: FuzzBase.shape).weights
        let small = Safetensors(metadata: ["format": "pt"], tensors: [
            Safetensors.Tensor(name: "a", shape: [2, 2], values: [1, -2, 0.5, 0]),
            Safetensors.Tensor(name: "b", shape: [3], values: [.infinity, 3, -0]),
        ])
        return [peft, small.encoded()]
    }
}
