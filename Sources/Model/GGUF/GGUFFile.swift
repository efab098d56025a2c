import AdaptCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A GGUF model file (versions 2 and 3), memory-mapped read-only.
///
/// Layout (ggml/docs/gguf.md): magic "GGUF", version u32, tensor count u64, metadata count u64, the metadata
/// key/value pairs, the tensor infos (name, dimension count u32, dimensions u64…, type u32, offset u64 relative
/// to the data section), padding to `general.alignment` (default 32), then the tensor data. Every count,
/// length and offset is checked against the file's size before it is used, so a damaged file is a
/// `ModelError`, never a crash or a huge allocation.
public final class GGUFFile: @unchecked Sendable {  // immutable after init; the mapping is read-only
    public let url: URL
    public let version: UInt32
    public let metadata: [String: GGUFValue]
    /// Metadata keys in file order (the dictionary loses it).
    public let metadataKeys: [String]
    /// Tensors in file order.
    public let tensors: [GGUFTensorInfo]
    /// Tensors of a type this reader cannot dequantize (empty unless the file was opened with
    /// `acceptingUnsupportedTensorTypes`), so `model inspect` can name them instead of failing.
    public let unsupportedTensors: [GGUFUnsupportedTensor]
    /// Absolute offset of the tensor data section.
    public let dataOffset: Int
    public let alignment: Int
    public let fileSize: Int

    private let base: UnsafeRawPointer?
    private let index: [String: Int]

    /// Opens `url`; a tensor of a type `GGMLType` lacks is a `ModelError.unsupportedTensorType` unless
    /// `acceptingUnsupportedTensorTypes`, which lists it in `unsupportedTensors` instead.
    public init(url: URL, acceptingUnsupportedTensorTypes: Bool = false) throws {
        self.url = url
        // A directory would fail to map with a puzzling "No such device", and a FIFO would block the open
        // until a writer came: only a regular file is opened.
        do { try RegularFile.requireReadable(url) } catch let CoreError.fileUnreadable(path, reason) {
            throw ModelError.fileUnreadable(path: path, reason: reason)
        }
        let fd = open(url.path, O_RDONLY)
        guard fd >= 0 else { throw ModelError.fileUnreadable(path: url.path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw ModelError.fileUnreadable(path: url.path, reason: String(cString: strerror(errno))) }
        let size = Int(info.st_size)
        var mapped: UnsafeRawPointer? = nil
        if size > 0 {
            guard let p = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), p != MAP_FAILED else {
                throw ModelError.fileUnreadable(path: url.path, reason: String(cString: strerror(errno)))
            }
            mapped = UnsafeRawPointer(p)
        }
        do {
            var parser = GGUFParser(UnsafeRawBufferPointer(start: mapped, count: size))
            parser.acceptsUnsupportedTensorTypes = acceptingUnsupportedTensorTypes
            let parsed = try parser.parse()
            self.version = parsed.version
            self.metadata = parsed.metadata
            self.metadataKeys = parsed.keys
            self.tensors = parsed.tensors
            self.unsupportedTensors = parsed.unsupported
            self.dataOffset = parsed.dataOffset
            self.alignment = parsed.alignment
        } catch {
            if let mapped { munmap(UnsafeMutableRawPointer(mutating: mapped), size) }
            throw error
        }
        self.base = mapped
        self.fileSize = size
        var index: [String: Int] = [:]
        for (i, t) in tensors.enumerated() { index[t.name] = i }
        self.index = index
    }

    deinit {
        if let base { munmap(UnsafeMutableRawPointer(mutating: base), fileSize) }
    }

    public func tensor(named name: String) -> GGUFTensorInfo? { index[name].map { tensors[$0] } }

    /// The raw bytes of a tensor, valid while this object lives. The offsets were checked at open.
    public func bytes(of info: GGUFTensorInfo) -> UnsafeRawBufferPointer {
        precondition(info.offset >= 0 && info.offset + info.byteCount <= fileSize, "tensor info does not belong to this file")
        return UnsafeRawBufferPointer(start: base.map { $0 + info.offset }, count: info.byteCount)
    }

    /// The tensor's values as f32, row-major with `dimensions[0]` fastest.
    public func dequantize(_ info: GGUFTensorInfo) throws -> [Float] {
        guard info.offset >= 0, info.offset + info.byteCount <= fileSize else { throw ModelError.tensorOutOfBounds(name: info.name) }
        return Dequantize.toFloat(bytes(of: info), type: info.type, count: info.elementCount)
    }

    /// Dequantizes a tensor straight into `destination`, which must hold `elementCount` floats.
    public func dequantize(_ info: GGUFTensorInfo, into destination: UnsafeMutableBufferPointer<Float>) {
        precondition(destination.count >= info.elementCount)
        Dequantize.convert(bytes(of: info), type: info.type, count: info.elementCount, into: destination.baseAddress!)
    }

    public func string(_ key: String) -> String? { metadata[key]?.stringValue }
    public func int(_ key: String) -> Int? { metadata[key]?.intValue }
    public func double(_ key: String) -> Double? { metadata[key]?.doubleValue }
    public func bool(_ key: String) -> Bool? {
        if case let .bool(b)? = metadata[key] { return b }
        return nil
    }
    public func stringArray(_ key: String) -> [String]? {
        guard let values = metadata[key]?.arrayValue else { return nil }
        var out: [String] = []
        out.reserveCapacity(values.count)
        for v in values {
            guard let s = v.stringValue else { return nil }
            out.append(s)
        }
        return out
    }
    public func intArray(_ key: String) -> [Int]? {
        guard let values = metadata[key]?.arrayValue else { return nil }
        var out: [Int] = []
        out.reserveCapacity(values.count)
        for v in values {
            guard let i = v.intValue else { return nil }
            out.append(i)
        }
        return out
    }
    public func doubleArray(_ key: String) -> [Double]? {
        guard let values = metadata[key]?.arrayValue else { return nil }
        var out: [Double] = []
        out.reserveCapacity(values.count)
        for v in values {
            guard let d = v.doubleValue else { return nil }
            out.append(d)
        }
        return out
    }
}

/// A bounds-checked reader over the mapped bytes.
struct GGUFParser {
    let bytes: UnsafeRawBufferPointer
    var position = 0
    /// Array elements the metadata may still hold. An element takes as little as one byte in the file but a
    /// whole `GGUFValue` (24 bytes) in memory, so a count the file's size allows can still ask for far more
    /// memory than the machine has; 2²⁴ is some twenty times what a large vocabulary's tokens, types and
    /// merges need together.
    var arrayElementBudget = GGUFParser.maxArrayElements
    var acceptsUnsupportedTensorTypes = false

    static let maxArrayElements = 1 << 24

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    struct Parsed {
        var version: UInt32
        var metadata: [String: GGUFValue]
        var keys: [String]
        var tensors: [GGUFTensorInfo]
        var unsupported: [GGUFUnsupportedTensor]
        var dataOffset: Int
        var alignment: Int
    }

    static let magic: UInt32 = 0x4655_4747  // "GGUF" read little-endian
    static let maxDimensions = 4            // GGML_MAX_DIMS

    var remaining: Int { bytes.count - position }

    mutating func need(_ n: Int) throws {
        guard n >= 0, n <= remaining else { throw ModelError.truncated(offset: position, need: n) }
    }

    mutating func read<T: FixedWidthInteger>(_: T.Type) throws -> T {
        try need(MemoryLayout<T>.size)
        let v = T(littleEndian: bytes.loadUnaligned(fromByteOffset: position, as: T.self))
        position += MemoryLayout<T>.size
        return v
    }

    /// A count that must be backed by at least `minimumBytesEach` bytes per item still in the file.
    mutating func readCount(_ what: String, minimumBytesEach: Int) throws -> Int {
        let at = position
        let raw = try read(UInt64.self)
        guard raw <= UInt64(Int.max), Int(raw) <= remaining / max(1, minimumBytesEach) else {
            throw ModelError.countTooLarge(what: what, count: raw, offset: at)
        }
        return Int(raw)
    }

    mutating func readString() throws -> String {
        let at = position
        let length = try readCount("string length", minimumBytesEach: 1)
        try need(length)
        let slice = UnsafeRawBufferPointer(rebasing: bytes[position..<(position + length)])
        guard let s = String(validating: slice, as: UTF8.self) else { throw ModelError.invalidString(offset: at) }
        position += length
        return s
    }

    mutating func readValue(_ type: GGUFValueType, key: String, depth: Int = 0) throws -> GGUFValue {
        switch type {
        case .uint8: return .uint8(try read(UInt8.self))
        case .int8: return .int8(try read(Int8.self))
        case .uint16: return .uint16(try read(UInt16.self))
        case .int16: return .int16(try read(Int16.self))
        case .uint32: return .uint32(try read(UInt32.self))
        case .int32: return .int32(try read(Int32.self))
        case .float32: return .float32(Float(bitPattern: try read(UInt32.self)))
        case .bool: return .bool(try read(UInt8.self) != 0)
        case .string: return .string(try readString())
        case .uint64: return .uint64(try read(UInt64.self))
        case .int64: return .int64(try read(Int64.self))
        case .float64: return .float64(Double(bitPattern: try read(UInt64.self)))
        case .array:
            let rawType = try read(UInt32.self)
            guard let elementType = GGUFValueType(rawValue: rawType) else {
                throw ModelError.unknownValueType(key: key, type: rawType)
            }
            // Nested arrays are allowed by the spec; a depth limit keeps a hostile file from exhausting the stack.
            guard depth < 8 else { throw ModelError.unknownValueType(key: key, type: rawType) }
            // The smallest encoding of one element: its fixed size, 8 bytes for a string's length, 12 for an
            // array's type and count.
            let minimum = elementType.fixedSize ?? (elementType == .string ? 8 : 12)
            let count = try readCount("array length of \(key)", minimumBytesEach: minimum)
            guard count <= arrayElementBudget else {
                throw ModelError.metadataTooLarge(key: key, count: count, limit: Self.maxArrayElements)
            }
            arrayElementBudget -= count
            var values: [GGUFValue] = []
            values.reserveCapacity(count)
            for _ in 0..<count { values.append(try readValue(elementType, key: key, depth: depth + 1)) }
            return .array(elementType, values)
        }
    }

    mutating func parse() throws -> Parsed {
        let magic = try read(UInt32.self)
        guard magic == Self.magic else { throw ModelError.badMagic(magic) }
        let version = try read(UInt32.self)
        guard version == 2 || version == 3 else { throw ModelError.unsupportedVersion(version) }
        // A tensor info takes at least 8 (name length) + 4 + 4 + 8 bytes; a key/value at least 8 + 4 + 1.
        let tensorCount = try readCount("tensor count", minimumBytesEach: 24)
        let kvCount = try readCount("metadata count", minimumBytesEach: 13)

        var metadata: [String: GGUFValue] = [:]
        var keys: [String] = []
        for _ in 0..<kvCount {
            let key = try readString()
            let rawType = try read(UInt32.self)
            guard let type = GGUFValueType(rawValue: rawType) else { throw ModelError.unknownValueType(key: key, type: rawType) }
            let value = try readValue(type, key: key)
            guard metadata.updateValue(value, forKey: key) == nil else { throw ModelError.duplicateKey(key) }
            keys.append(key)
        }

        var alignment = 32
        if let a = metadata["general.alignment"] {
            guard let v = a.intValue, v > 0, v & (v - 1) == 0, v <= 1 << 20 else {
                throw ModelError.badAlignment(a.intValue.map(UInt64.init) ?? 0)
            }
            alignment = v
        }

        struct Raw { var name: String; var dims: [Int]; var type: GGMLType; var offset: Int }
        var raws: [Raw] = []
        raws.reserveCapacity(tensorCount)
        var unsupported: [GGUFUnsupportedTensor] = []
        var names = Set<String>()
        for _ in 0..<tensorCount {
            let name = try readString()
            let nDims = try read(UInt32.self)
            guard nDims >= 1, nDims <= UInt32(Self.maxDimensions) else {
                throw ModelError.badTensorShape(name: name, reason: "\(nDims) dimensions (1 to \(Self.maxDimensions) allowed)")
            }
            var dims: [Int] = []
            var elements = 1
            for _ in 0..<nDims {
                let d = try read(UInt64.self)
                guard d <= UInt64(Int32.max) else { throw ModelError.badTensorShape(name: name, reason: "dimension \(d) is too large") }
                dims.append(Int(d))
                let (p, overflow) = elements.multipliedReportingOverflow(by: Int(d))
                guard !overflow, p <= Int(Int32.max) * 64 else { throw ModelError.badTensorShape(name: name, reason: "too many elements") }
                elements = p
            }
            let rawType = try read(UInt32.self)
            guard let type = GGMLType(rawValue: rawType) else {
                guard acceptsUnsupportedTensorTypes else { throw ModelError.unsupportedTensorType(name: name, type: rawType) }
                // Its size is unknown here, so its data is not located; the offsets of the others stand alone.
                _ = try read(UInt64.self)
                guard names.insert(name).inserted else { throw ModelError.duplicateTensor(name) }
                unsupported.append(GGUFUnsupportedTensor(name: name, dimensions: dims, rawType: rawType))
                continue
            }
            guard dims[0] % type.blockSize == 0 else {
                throw ModelError.badTensorShape(name: name, reason: "row length \(dims[0]) is not a multiple of the \(type.name) block of \(type.blockSize)")
            }
            let offset = try read(UInt64.self)
            guard offset <= UInt64(bytes.count) else { throw ModelError.tensorOutOfBounds(name: name) }
            guard names.insert(name).inserted else { throw ModelError.duplicateTensor(name) }
            raws.append(Raw(name: name, dims: dims, type: type, offset: Int(offset)))
        }

        let dataOffset = (position + alignment - 1) / alignment * alignment
        var tensors: [GGUFTensorInfo] = []
        tensors.reserveCapacity(raws.count)
        for r in raws {
            let elements = r.dims.reduce(1, *)
            let byteCount = elements / r.type.blockSize * r.type.blockBytes
            guard r.offset % alignment == 0 else {
                throw ModelError.badTensorShape(name: r.name, reason: "data offset \(r.offset) is not a multiple of the alignment \(alignment)")
            }
            let start = dataOffset + r.offset
            guard start <= bytes.count, byteCount <= bytes.count - start else { throw ModelError.tensorOutOfBounds(name: r.name) }
            tensors.append(GGUFTensorInfo(name: r.name, dimensions: r.dims, type: r.type, offset: start, byteCount: byteCount))
        }
        return Parsed(version: version, metadata: metadata, keys: keys, tensors: tensors, unsupported: unsupported,
                      dataOffset: dataOffset, alignment: alignment)
    }
}
