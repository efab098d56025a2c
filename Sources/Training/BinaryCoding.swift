import Adapters
import Foundation

// Little-endian binary encoding of checkpoints (adapter files write their few fields themselves). Floats are
// stored as their IEEE-754 bit patterns, so what is read back is bit for bit what was written.

struct BinaryWriter {
    private(set) var data = Data()

    mutating func bytes(_ raw: [UInt8]) { data.append(contentsOf: raw) }
    mutating func bytes(_ raw: Data) { data.append(raw) }
    mutating func ascii(_ text: StaticString) {
        text.withUTF8Buffer { data.append(contentsOf: $0) }
    }
    mutating func u8(_ value: UInt8) { data.append(value) }
    mutating func u16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
    mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
    mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }

    mutating func floats(_ values: [Float]) {
        #if _endian(little)
        values.withUnsafeBytes { data.append(contentsOf: $0) }
        #else
        for v in values { u32(v.bitPattern) }
        #endif
    }

    mutating func doubles(_ values: [Double]) {
        for v in values { u64(v.bitPattern) }
    }

    /// Tensors as: count (u32), then per tensor name length (u16), UTF-8 name, rank (u8), dims (u32 each),
    /// then every tensor's float32 values in order.
    mutating func tensors(_ tensors: NamedTensors) {
        u32(UInt32(tensors.count))
        for (name, shape) in zip(tensors.names, tensors.shapes) {
            let utf8 = Array(name.utf8)
            u16(UInt16(utf8.count))
            bytes(utf8)
            u8(UInt8(shape.count))
            for d in shape { u32(UInt32(d)) }
        }
        for values in tensors.values { floats(values) }
    }
}

/// Reads what `BinaryWriter` wrote, throwing `TrainingError.malformed`/`.truncated` naming the file and field.
struct BinaryReader {
    let data: Data
    let file: String
    private(set) var offset: Int

    init(_ data: Data, file: String, offset: Int = 0) {
        self.data = data
        self.file = file
        self.offset = offset
    }

    var remaining: Int { data.count - offset }

    mutating func bytes(_ count: Int, field: String) throws -> Data {
        guard count >= 0 else { throw TrainingError.malformed(file: file, field: field, reason: "has a negative length") }
        guard count <= remaining else {
            throw TrainingError.malformed(file: file, field: field, reason: "runs past the end of the data (\(count) bytes wanted, \(remaining) left)")
        }
        let start = data.startIndex + offset
        offset += count
        return data.subdata(in: start..<(start + count))
    }

    private mutating func integer<T: FixedWidthInteger>(_ type: T.Type, field: String) throws -> T {
        let raw = try bytes(MemoryLayout<T>.size, field: field)
        var value: T = 0
        _ = withUnsafeMutableBytes(of: &value) { raw.copyBytes(to: $0) }
        return T(littleEndian: value)
    }

    mutating func u8(_ field: String) throws -> UInt8 { try integer(UInt8.self, field: field) }
    mutating func u16(_ field: String) throws -> UInt16 { try integer(UInt16.self, field: field) }
    mutating func u32(_ field: String) throws -> UInt32 { try integer(UInt32.self, field: field) }
    mutating func u64(_ field: String) throws -> UInt64 { try integer(UInt64.self, field: field) }

    mutating func floats(_ count: Int, field: String) throws -> [Float] {
        let raw = try bytes(count * 4, field: field)
        var values = [Float](repeating: 0, count: count)
        _ = values.withUnsafeMutableBytes { raw.copyBytes(to: $0) }
        #if _endian(big)
        for i in values.indices { values[i] = Float(bitPattern: UInt32(littleEndian: values[i].bitPattern)) }
        #endif
        return values
    }

    mutating func doubles(_ count: Int, field: String) throws -> [Double] {
        var values: [Double] = []
        values.reserveCapacity(count)
        for _ in 0..<count { values.append(Double(bitPattern: try u64(field))) }
        return values
    }

    mutating func tensors(field: String, maxScalars: Int = 1 << 30) throws -> NamedTensors {
        let count = Int(try u32("\(field) count"))
        guard count <= 100_000 else { throw TrainingError.malformed(file: file, field: field, reason: "declares \(count) tensors") }
        var names: [String] = [], shapes: [[Int]] = [], sizes: [Int] = []
        var total = 0
        for t in 0..<count {
            let length = Int(try u16("\(field)[\(t)] name length"))
            guard let name = String(data: try bytes(length, field: "\(field)[\(t)] name"), encoding: .utf8) else {
                throw TrainingError.malformed(file: file, field: "\(field)[\(t)] name", reason: "is not UTF-8")
            }
            let rank = Int(try u8("\(name) rank"))
            var shape: [Int] = []
            for _ in 0..<rank { shape.append(Int(try u32("\(name) shape"))) }
            // Checked arithmetic: the dimensions come from the file, and a product past Int.max must be an
            // error, not a trap.
            guard let size = NamedTensors.elementCount(of: shape), size <= maxScalars - total else {
                throw TrainingError.malformed(file: file, field: name, reason: "makes the tensors larger than \(maxScalars) values")
            }
            total += size
            names.append(name)
            shapes.append(shape)
            sizes.append(size)
        }
        var values: [[Float]] = []
        for (name, size) in zip(names, sizes) {
            values.append(try floats(size, field: "\(name) values"))
        }
        return NamedTensors(names: names, shapes: shapes, values: values)
    }
}
