import AdaptCore
import Foundation

/// Builds a GGUF file (version 3 by default): metadata of every type and tensors stored as F32, F16, BF16, Q8_0,
/// Q4_0 or Q4_1, quantized here from f32 values that are given, or made by a generator while the file is written.
///
/// Used to make the small random-weight models tests run on, the published-shape models benchmarks run on
/// (whose tensors are made chunk by chunk while the file is written, never held whole), and by tests that damage
/// files on purpose.
public struct GGUFWriter: Sendable {
    public var version: UInt32 = 3
    public var alignment: Int = 32
    public private(set) var metadata: [(key: String, value: GGUFValue)] = []
    private var entries: [Entry] = []

    /// Values of a generated tensor for a range of its flat indices (`dimensions[0]` fastest): a pure function of
    /// the range, so the chunks can be made in any order and the file is the same.
    public typealias ValueGenerator = @Sendable (Range<Int>) -> [Float]

    /// One tensor: its bytes held, or made from `values` when the file is written.
    private struct Entry: Sendable {
        var name: String
        var dimensions: [Int]
        var type: UInt32
        var byteCount: Int
        var bytes: [UInt8]?
        var generated: (type: GGMLType, values: ValueGenerator)?
    }

    /// Values a generated tensor is made in at a time: a multiple of every block size (256 at most).
    static let chunkValues = 1 << 20

    public init() {}

    /// The tensors in file order with their bytes (generated ones are made here: for small files and tests).
    public var tensors: [(name: String, dimensions: [Int], type: UInt32, data: [UInt8])] {
        entries.map { entry in
            var data: [UInt8] = []
            Self.produce(entry) { data.append(contentsOf: $0) }
            return (entry.name, entry.dimensions, entry.type, data)
        }
    }

    /// Sets a metadata value; a key set twice keeps its first position and its last value.
    public mutating func set(_ key: String, _ value: GGUFValue) {
        if let i = metadata.firstIndex(where: { $0.key == key }) { metadata[i].value = value } else { metadata.append((key, value)) }
    }

    public mutating func set(_ key: String, string: String) { set(key, .string(string)) }
    public mutating func set(_ key: String, uint32: UInt32) { set(key, .uint32(uint32)) }
    public mutating func set(_ key: String, float32: Float) { set(key, .float32(float32)) }
    public mutating func set(_ key: String, strings: [String]) { set(key, .array(.string, strings.map(GGUFValue.string))) }
    public mutating func set(_ key: String, int32s: [Int32]) { set(key, .array(.int32, int32s.map(GGUFValue.int32))) }
    public mutating func set(_ key: String, float32s: [Float]) { set(key, .array(.float32, float32s.map(GGUFValue.float32))) }

    /// Adds a tensor of `values` (row-major, `dimensions[0]` fastest) stored as `type`.
    public mutating func addTensor(_ name: String, dimensions: [Int], values: [Float], as type: GGMLType) {
        precondition(dimensions.reduce(1, *) == values.count, "tensor \(name): \(values.count) values for shape \(dimensions)")
        precondition(values.allSatisfy { $0.isFinite }, "tensor \(name) holds a non-finite value")
        let bytes = Quantize.bytes(values, as: type)
        entries.append(Entry(name: name, dimensions: dimensions, type: type.rawValue, byteCount: bytes.count, bytes: bytes))
    }

    /// Adds a tensor stored as `type` whose values `values` makes, chunk by chunk, when the file is written.
    public mutating func addTensor(_ name: String, dimensions: [Int], as type: GGMLType, values: @escaping ValueGenerator) {
        let count = dimensions.reduce(1, *)
        precondition(Quantize.writableTypes.contains(type) && count % type.blockSize == 0, "tensor \(name): \(count) values as \(type.name)")
        entries.append(Entry(name: name, dimensions: dimensions, type: type.rawValue, byteCount: count / type.blockSize * type.blockBytes,
                             generated: (type, values)))
    }

    /// Adds a tensor from already encoded bytes with any type number (to build files a reader must refuse).
    public mutating func addRawTensor(_ name: String, dimensions: [Int], type: UInt32, data: [UInt8]) {
        entries.append(Entry(name: name, dimensions: dimensions, type: type, byteCount: data.count, bytes: data))
    }

    /// Hands an entry's bytes to `append`, a generated one a chunk at a time (its values checked finite as
    /// `addTensor(_:dimensions:values:as:)` checks them).
    private static func produce(_ entry: Entry, _ append: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        if let bytes = entry.bytes {
            try bytes.withUnsafeBytes { try append($0) }
            return
        }
        guard let (type, values) = entry.generated else { return }
        let count = entry.dimensions.reduce(1, *)
        for start in stride(from: 0, to: count, by: chunkValues) {
            let chunk = values(start..<min(count, start + chunkValues))
            precondition(chunk.count == min(count, start + chunkValues) - start && chunk.allSatisfy { $0.isFinite },
                         "tensor \(entry.name): the generator gave a wrong count or a non-finite value")
            try Quantize.bytes(chunk, as: type).withUnsafeBytes { try append($0) }
        }
    }

    /// The whole file.
    public func data() -> [UInt8] {
        var out: [UInt8] = []
        serialize { out.append(contentsOf: $0) }
        return out
    }

    /// The file's bytes in order: the header, then each tensor's data, aligned.
    private func serialize(_ sink: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        var out: [UInt8] = []
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
        func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
        func str(_ s: String) { let b = Array(s.utf8); u64(UInt64(b.count)); out.append(contentsOf: b) }
        func value(_ v: GGUFValue) {
            switch v {
            case let .uint8(x): out.append(x)
            case let .int8(x): out.append(UInt8(bitPattern: x))
            case let .uint16(x): withUnsafeBytes(of: x.littleEndian) { out.append(contentsOf: $0) }
            case let .int16(x): withUnsafeBytes(of: x.littleEndian) { out.append(contentsOf: $0) }
            case let .uint32(x): u32(x)
            case let .int32(x): u32(UInt32(bitPattern: x))
            case let .float32(x): u32(x.bitPattern)
            case let .bool(x): out.append(x ? 1 : 0)
            case let .string(x): str(x)
            case let .uint64(x): u64(x)
            case let .int64(x): u64(UInt64(bitPattern: x))
            case let .float64(x): u64(x.bitPattern)
            case let .array(type, values):
                u32(type.rawValue)
                u64(UInt64(values.count))
                for element in values {
                    precondition(element.type == type, "array element of type \(element.type) in an array of \(type)")
                    value(element)
                }
            }
        }
        func pad() { while out.count % alignment != 0 { out.append(0) } }

        out.append(contentsOf: Array("GGUF".utf8))
        u32(version)
        u64(UInt64(entries.count))
        var kvs = metadata
        if alignment != 32, !kvs.contains(where: { $0.key == "general.alignment" }) {
            kvs.append(("general.alignment", .uint32(UInt32(alignment))))
        }
        u64(UInt64(kvs.count))
        for (key, v) in kvs {
            str(key)
            u32(v.type.rawValue)
            value(v)
        }
        var offset = 0
        for t in entries {
            str(t.name)
            u32(UInt32(t.dimensions.count))
            for d in t.dimensions { u64(UInt64(d)) }
            u32(t.type)
            u64(UInt64(offset))
            offset += (t.byteCount + alignment - 1) / alignment * alignment
        }
        pad()
        try out.withUnsafeBytes { try sink($0) }
        let zeros = [UInt8](repeating: 0, count: alignment)
        for t in entries {
            try Self.produce(t, sink)
            let padding = (alignment - t.byteCount % alignment) % alignment
            try zeros.withUnsafeBytes { try sink(UnsafeRawBufferPointer(rebasing: $0[..<padding])) }
        }
    }

    /// Writes the file atomically, generated tensors a chunk at a time.
    public func write(to url: URL) throws {
        do {
            try AtomicFile.write(to: url) { append in try serialize(append) }
        } catch {
            throw ModelError.fileUnwritable(path: url.path, reason: "\(error)")
        }
    }
}
