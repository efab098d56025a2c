/// The metadata value types of GGUF (spec: ggml/docs/gguf.md, `gguf_metadata_value_type`).
public enum GGUFValueType: UInt32, Sendable, Equatable {
    case uint8 = 0, int8 = 1, uint16 = 2, int16 = 3, uint32 = 4, int32 = 5, float32 = 6, bool = 7
    case string = 8, array = 9, uint64 = 10, int64 = 11, float64 = 12

    /// Bytes of one value of a fixed-size type; nil for strings and arrays.
    var fixedSize: Int? {
        switch self {
        case .uint8, .int8, .bool: return 1
        case .uint16, .int16: return 2
        case .uint32, .int32, .float32: return 4
        case .uint64, .int64, .float64: return 8
        case .string, .array: return nil
        }
    }
}

/// One metadata value; arrays carry their element type so an empty array round-trips.
public enum GGUFValue: Sendable, Equatable {
    case uint8(UInt8), int8(Int8), uint16(UInt16), int16(Int16), uint32(UInt32), int32(Int32), float32(Float)
    case bool(Bool), string(String), array(GGUFValueType, [GGUFValue]), uint64(UInt64), int64(Int64)
    case float64(Double)

    public var type: GGUFValueType {
        switch self {
        case .uint8: return .uint8
        case .int8: return .int8
        case .uint16: return .uint16
        case .int16: return .int16
        case .uint32: return .uint32
        case .int32: return .int32
        case .float32: return .float32
        case .bool: return .bool
        case .string: return .string
        case .array: return .array
        case .uint64: return .uint64
        case .int64: return .int64
        case .float64: return .float64
        }
    }

    /// The value as an integer if it is one of the integer types (and fits in Int).
    public var intValue: Int? {
        switch self {
        case let .uint8(v): return Int(v)
        case let .int8(v): return Int(v)
        case let .uint16(v): return Int(v)
        case let .int16(v): return Int(v)
        case let .uint32(v): return Int(v)
        case let .int32(v): return Int(v)
        case let .uint64(v): return Int(exactly: v)
        case let .int64(v): return Int(v)
        default: return nil
        }
    }

    /// The value as a Double if it is numeric.
    public var doubleValue: Double? {
        switch self {
        case let .float32(v): return Double(v)
        case let .float64(v): return v
        default: return intValue.map(Double.init)
        }
    }

    public var stringValue: String? {
        if case let .string(s) = self { return s }
        return nil
    }

    public var arrayValue: [GGUFValue]? {
        if case let .array(_, values) = self { return values }
        return nil
    }
}

/// GGML tensor element types this project can read and write (ggml.h, `enum ggml_type`).
public enum GGMLType: UInt32, Sendable, Equatable, CaseIterable {
    case f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q8_0 = 8, bf16 = 30

    /// Elements per block: quantized types store blocks of 32 values.
    public var blockSize: Int {
        switch self {
        case .f32, .f16, .bf16: return 1
        case .q4_0, .q4_1, .q8_0: return 32
        }
    }

    /// Bytes per block (ggml-common.h: block_q4_0 = f16 d + 16 nibble bytes, block_q4_1 = f16 d, f16 m +
    /// 16 bytes, block_q8_0 = f16 d + 32 int8).
    public var blockBytes: Int {
        switch self {
        case .f32: return 4
        case .f16, .bf16: return 2
        case .q4_0: return 18
        case .q4_1: return 20
        case .q8_0: return 34
        }
    }

    public var name: String {
        switch self {
        case .f32: return "F32"
        case .f16: return "F16"
        case .q4_0: return "Q4_0"
        case .q4_1: return "Q4_1"
        case .q8_0: return "Q8_0"
        case .bf16: return "BF16"
        }
    }
}

/// Where one tensor lives in a GGUF file and what it holds.
public struct GGUFTensorInfo: Sendable, Equatable {
    public let name: String
    /// GGML order: `dimensions[0]` is the fastest-varying (a row's length); a weight of a linear map from
    /// `in` to `out` features is stored as `[in, out]`, i.e. `out` rows of `in` values.
    public let dimensions: [Int]
    public let type: GGMLType
    /// Absolute byte offset in the file.
    public let offset: Int
    public let byteCount: Int

    public var elementCount: Int { dimensions.reduce(1, *) }

    public init(name: String, dimensions: [Int], type: GGMLType, offset: Int, byteCount: Int) {
        self.name = name
        self.dimensions = dimensions
        self.type = type
        self.offset = offset
        self.byteCount = byteCount
    }
}
