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

/// GGML tensor element types this project can read (ggml.h, `enum ggml_type`); `Quantize` writes the first six.
public enum GGMLType: UInt32, Sendable, Equatable, CaseIterable {
    case f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q5_0 = 6, q5_1 = 7, q8_0 = 8
    case q2_K = 10, q3_K = 11, q4_K = 12, q5_K = 13, q6_K = 14
    case iq4_nl = 20, iq4_xs = 23, bf16 = 30

    /// Elements per block: the legacy quantized types store blocks of 32 values, the K-quants super-blocks of 256.
    public var blockSize: Int {
        switch self {
        case .f32, .f16, .bf16: return 1
        case .q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .iq4_nl: return 32
        case .q2_K, .q3_K, .q4_K, .q5_K, .q6_K, .iq4_xs: return 256
        }
    }

    /// Bytes per block (ggml-common.h's `block_*` structs; `Dequantize` documents each layout).
    public var blockBytes: Int {
        switch self {
        case .f32: return 4
        case .f16, .bf16: return 2
        case .q4_0, .iq4_nl: return 18
        case .q4_1: return 20
        case .q5_0: return 22
        case .q5_1: return 24
        case .q8_0: return 34
        case .q2_K: return 84
        case .q3_K: return 110
        case .q4_K: return 144
        case .q5_K: return 176
        case .q6_K: return 210
        case .iq4_xs: return 136
        }
    }

    public var name: String { Self.name(ofRawType: rawValue) }

    /// The ggml name of any type number, known to this reader or not, for messages and `model inspect`
    /// (gguf-py's `GGMLQuantizationType`); a number ggml never assigned is `type N`.
    public static func name(ofRawType raw: UInt32) -> String {
        let names: [UInt32: String] = [
            0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
            10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K",
            16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S",
            23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16",
            34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4",
        ]
        return names[raw] ?? "type \(raw)"
    }

    /// How messages name a type number: `IQ2_XXS (16)`, or just the number when ggml never named it.
    public static func label(ofRawType raw: UInt32) -> String {
        let name = name(ofRawType: raw)
        return name.hasPrefix("type ") ? "\(raw)" : "\(name) (\(raw))"
    }

    /// The names of every type this reader dequantizes, in type-number order, for error messages.
    public static var supportedNames: String { allCases.map(\.name).joined(separator: ", ") }
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

/// A tensor whose type this reader cannot dequantize, as `model inspect` reports it.
public struct GGUFUnsupportedTensor: Sendable, Equatable {
    public let name: String
    public let dimensions: [Int]
    public let rawType: UInt32

    public init(name: String, dimensions: [Int], rawType: UInt32) {
        self.name = name
        self.dimensions = dimensions
        self.rawType = rawType
    }

    public var typeName: String { GGMLType.name(ofRawType: rawType) }
    public var elementCount: Int { dimensions.reduce(1, *) }
}
