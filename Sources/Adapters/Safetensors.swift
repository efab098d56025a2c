import AdaptCore
import Foundation

/// A safetensors file (huggingface/safetensors): a u64 little-endian header length N, N bytes of JSON
/// `{"name": {"dtype", "shape", "data_offsets": [begin, end]}, …, "__metadata__": {string: string}}`, then the
/// tensors' bytes, row-major and little-endian, offsets relative to the end of the header.
///
/// PEFT and mlx-lm keep adapters in it. This reads F32, F16 and BF16 (what those tools save) and writes F32.
/// Reading refuses what the reference Rust reader refuses: a header past the end, offsets that leave gaps
/// or overlap, a size that is not shape × type, bytes after the last tensor.
public struct Safetensors: Sendable, Equatable {
    public enum DType: String, Sendable {
        case f32 = "F32", f16 = "F16", bf16 = "BF16"

        var size: Int { self == .f32 ? 4 : 2 }
    }

    public struct Tensor: Sendable, Equatable {
        public var name: String
        public var shape: [Int]
        public var values: [Float]

        public init(name: String, shape: [Int], values: [Float]) {
            precondition(shape.reduce(1, *) == values.count, "tensor \(name): \(values.count) values for shape \(shape)")
            self.name = name
            self.shape = shape
            self.values = values
        }
    }

    public var metadata: [String: String]
    public var tensors: [Tensor]

    public init(metadata: [String: String], tensors: [Tensor]) {
        self.metadata = metadata
        self.tensors = tensors
    }

    /// The reference reader's bound on the header: a larger one is an attack or damage, not an adapter.
    static let maximumHeader = 100_000_000

    public func tensor(named name: String) -> Tensor? { tensors.first { $0.name == name } }

    /// The file's bytes: tensors sorted by name, every value F32, the header padded with spaces to a multiple
    /// of 8 so the data is aligned (what the reference writer does).
    public func encoded() -> Data {
        let sorted = tensors.sorted { $0.name < $1.name }
        var header: [String: JSONValue] = [:]
        var offset = 0
        for tensor in sorted {
            let size = tensor.values.count * 4
            header[tensor.name] = .object([
                "dtype": .string(DType.f32.rawValue), "shape": .array(tensor.shape.map { .int($0) }),
                "data_offsets": .array([.int(offset), .int(offset + size)]),
            ])
            offset += size
        }
        if !metadata.isEmpty { header["__metadata__"] = .object(metadata.mapValues { .string($0) }) }
        var json = JSON.canonical(JSONValue.object(header))
        while json.count % 8 != 0 { json.append(0x20) }
        var data = Data(capacity: 8 + json.count + offset)
        withUnsafeBytes(of: UInt64(json.count).littleEndian) { data.append(contentsOf: $0) }
        data.append(json)
        for tensor in sorted {
            #if _endian(little)
            tensor.values.withUnsafeBytes { data.append(contentsOf: $0) }
            #else
            for v in tensor.values { withUnsafeBytes(of: v.bitPattern.littleEndian) { data.append(contentsOf: $0) } }
            #endif
        }
        return data
    }

    /// Parses and checks a whole file; `name` only labels errors.
    public init(data: Data, name: String) throws(AdapterExchangeError) {
        guard data.count >= 8 else { throw .notSafetensors(file: name, reason: "it has \(data.count) bytes, fewer than the 8 of the header length") }
        let declared = data.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
        guard declared <= UInt64(Self.maximumHeader) else {
            throw .notSafetensors(file: name, reason: "its header length \(declared) is larger than any safetensors header")
        }
        let headerLength = Int(declared)
        guard 8 + headerLength <= data.count else { throw .truncated(file: name, expected: 8 + headerLength, actual: data.count) }
        let json = data.subdata(in: 8..<(8 + headerLength))
        guard json.first == UInt8(ascii: "{") else { throw .notSafetensors(file: name, reason: "its header is not a JSON object") }
        guard JSONDuplicateKeys.first(in: json) == nil else { throw .notSafetensors(file: name, reason: "its header names a key twice") }
        guard let header = try? JSONDecoder().decode(JSONValue.self, from: json), let fields = header.objectValue else {
            throw .notSafetensors(file: name, reason: "its header is not valid JSON")
        }
        var metadata: [String: String] = [:]
        struct Entry { var name: String; var dtype: DType; var shape: [Int]; var begin: Int; var end: Int }
        var entries: [Entry] = []
        for (key, value) in fields {
            if key == "__metadata__" {
                guard let object = value.objectValue else { throw .notSafetensors(file: name, reason: "__metadata__ is not an object") }
                for (k, v) in object {
                    guard let text = v.stringValue else { throw .notSafetensors(file: name, reason: "__metadata__ holds a value that is not a string") }
                    metadata[k] = text
                }
                continue
            }
            guard let dtypeText = value["dtype"]?.stringValue, let shapeValues = value["shape"]?.arrayValue,
                  let offsets = value["data_offsets"]?.arrayValue, offsets.count == 2,
                  let begin = offsets[0].intValue, let end = offsets[1].intValue else {
                throw .notSafetensors(file: name, reason: "tensor \(key) lacks dtype, shape or data_offsets")
            }
            guard let dtype = DType(rawValue: dtypeText) else { throw .unsupportedType(file: name, tensor: key) }
            let shape = shapeValues.compactMap(\.intValue)
            guard shape.count == shapeValues.count, shape.count <= 8, shape.allSatisfy({ $0 >= 0 }),
                  let count = NamedTensors.elementCount(of: shape), count <= data.count else {
                throw .notSafetensors(file: name, reason: "tensor \(key) has an impossible shape")
            }
            guard begin >= 0, end >= begin, end - begin == count * dtype.size else {
                throw .notSafetensors(file: name, reason: "tensor \(key) has offsets that do not match its shape and type")
            }
            entries.append(Entry(name: key, dtype: dtype, shape: shape, begin: begin, end: end))
        }
        // The tensors must tile the buffer: no gap, no overlap, nothing after the last one.
        entries.sort { ($0.begin, $0.name) < ($1.begin, $1.name) }
        var next = 0
        for entry in entries {
            guard entry.begin == next else { throw .notSafetensors(file: name, reason: "tensor \(entry.name) does not start where the previous one ends") }
            next = entry.end
        }
        let buffer = data.count - 8 - headerLength
        guard next <= buffer else { throw .truncated(file: name, expected: 8 + headerLength + next, actual: data.count) }
        guard next == buffer else { throw .notSafetensors(file: name, reason: "\(buffer - next) bytes follow the last tensor") }
        let base = 8 + headerLength
        tensors = data.withUnsafeBytes { raw in
            entries.map { entry in
                let count = (entry.end - entry.begin) / entry.dtype.size
                var values = [Float](repeating: 0, count: count)
                let start = base + entry.begin
                for i in 0..<count {
                    switch entry.dtype {
                    case .f32:
                        values[i] = Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: start + 4 * i, as: UInt32.self)))
                    case .f16:
                        values[i] = Float(Float16(bitPattern: UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: start + 2 * i, as: UInt16.self))))
                    case .bf16:
                        let bits = UInt32(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: start + 2 * i, as: UInt16.self))) << 16
                        values[i] = Float(bitPattern: bits)
                    }
                }
                return Tensor(name: entry.name, shape: entry.shape, values: values)
            }
        }
        self.metadata = metadata
    }
}
