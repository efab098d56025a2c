import AdaptCore

/// `train.blas_threads`: how many OpenBLAS threads the train and eval steps compute with.
///
/// `auto` (the default) is every core the worker that claims the step may use (its CPU affinity, no more than
/// its control group's CPU quota, at most what this OpenBLAS runs), resolved when the step starts and recorded in its output (`inputs.blas_threads`) and, for
/// train, in its checkpoints: a resumed train step keeps its checkpoint's count and a replay its recorded one,
/// because 1 and 2 threads differ in the last bits (DESIGN.md, "Training and resume"). An integer fixes the count
/// on every machine, as every step planned before `auto` existed did.
public enum BLASThreadCount: Sendable, Equatable, Codable, CustomStringConvertible {
    case auto
    case fixed(Int)

    /// The word a pipeline file and a step input write for `auto`.
    public static let autoName = "auto"
    /// The largest fixed count a pipeline may name (the train step refuses more than its OpenBLAS runs).
    public static let maximumFixed = 256
    /// What a pipeline may write, for messages.
    public static let allowedValues = "\"\(autoName)\" (every core the worker may use, resolved when it claims the step) "
        + "or an integer from 1 to \(maximumFixed)"

    /// The fixed count; nil for `auto`.
    public var fixedCount: Int? {
        if case let .fixed(count) = self { return count }
        return nil
    }

    /// As a step input and a manifest write it: the integer, or `"auto"`.
    public var jsonValue: JSONValue {
        switch self {
        case .auto: return .string(Self.autoName)
        case let .fixed(count): return .int(count)
        }
    }

    public var description: String { fixedCount.map(String.init) ?? Self.autoName }

    /// The count `value` names (a step input's or a file's field), or nil when it names none.
    public init?(_ value: JSONValue) {
        if value.stringValue == Self.autoName {
            self = .auto
        } else if let count = value.intValue, (1...Self.maximumFixed).contains(count) {
            self = .fixed(count)
        } else {
            return nil
        }
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let count = try? c.decode(Int.self) {
            self = .fixed(count)
        } else if try c.decode(String.self) == Self.autoName {
            self = .auto
        } else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "blas_threads must be \(Self.allowedValues)")
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .auto: try c.encode(Self.autoName)
        case let .fixed(count): try c.encode(count)
        }
    }
}
