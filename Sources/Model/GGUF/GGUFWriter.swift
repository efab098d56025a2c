import AdaptCore
import Foundation

/// Builds a GGUF file (version 3 by default) in memory: metadata of every type and tensors stored as F32,
/// F16, BF16, Q8_0, Q4_0 or Q4_1, quantized here from f32 values.
///
/// Used to make the small random-weight models tests run on, and by tests that damage files on purpose.
public struct GGUFWriter: Sendable {
    public var version: UInt32 = 3
    public var alignment: Int = 32
    public private(set) var metadata: [(key: String, value: GGUFValue)] = []
    public private(set) var tensors: [(name: String, dimensions: [Int], type: UInt32, data: [UInt8])] = []

    public init() {}

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
        tensors.append((name, dimensions, type.rawValue, Quantize.bytes(values, as: type)))
    }

    /// Adds a tensor from already encoded bytes with any type number (to build files a reader must refuse).
    public mutating func addRawTensor(_ name: String, dimensions: [Int], type: UInt32, data: [UInt8]) {
        tensors.append((name, dimensions, type, data))
    }

    /// The whole file.
    public func data() -> [UInt8] {
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
        u64(UInt64(tensors.count))
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
        for t in tensors {
            str(t.name)
            u32(UInt32(t.dimensions.count))
            for d in t.dimensions { u64(UInt64(d)) }
            u32(t.type)
            u64(UInt64(offset))
            offset += (t.data.count + alignment - 1) / alignment * alignment
        }
        pad()
        for t in tensors {
            out.append(contentsOf: t.data)
            pad()
        }
        return out
    }

    /// Writes the file atomically.
    public func write(to url: URL) throws {
        do {
            try AtomicFile.write(Data(data()), to: url)
        } catch {
            throw ModelError.fileUnwritable(path: url.path, reason: "\(error)")
        }
    }
}
