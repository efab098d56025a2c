import AdaptCore
import Evaluation
import Foundation

/// The gate's report as the eval step recorded it (`gate`), with its `more_pairs_needed`, `min_effect` and `canary`
/// when the run has them.
///
/// A run planned before the fill-first held-out rule recorded the report without `more_pairs_needed`, and one planned
/// before the minimum effect and the forgetting guard without `min_effect` and `canary`; each keeps that shape, so
/// that it replays equal. Read back, its `report` says what the fields would have said (no minimum, no guard).
public struct RecordedGateReport: Codable, Sendable, Equatable {
    public var report: GateReport
    /// False for a run planned under the half-capped held-out rule.
    public var includesMorePairsNeeded: Bool
    /// False for a run planned before `eval.min_effect` and `eval.canary` existed (its input has neither).
    public var includesGuards: Bool

    public init(_ report: GateReport, includesMorePairsNeeded: Bool, includesGuards: Bool) {
        self.report = report
        self.includesMorePairsNeeded = includesMorePairsNeeded
        self.includesGuards = includesGuards
    }

    public init(from decoder: Decoder) throws {
        var fields = try [String: JSONValue](from: decoder)
        includesGuards = fields["min_effect"] != nil
        includesMorePairsNeeded = fields["more_pairs_needed"] != nil
        if !includesMorePairsNeeded, let pairs = fields["pairs"]?.intValue, let minimum = fields["min_pairs"]?.intValue {
            fields["more_pairs_needed"] = .int(max(0, minimum - pairs))
        }
        report = try StepResultCoding.decode(GateReport.self, from: .object(fields), codingPath: decoder.codingPath)
    }

    public func encode(to encoder: Encoder) throws {
        var fields = StepResultCoding.fields(of: report)
        if !includesMorePairsNeeded { fields["more_pairs_needed"] = nil }
        if !includesGuards { (fields["min_effect"], fields["canary"]) = (nil, nil) }
        try fields.encode(to: encoder)
    }
}

/// The JSON coding of step outputs: Foundation's coders with non-finite numbers spelled as `JSON.canonical`
/// spells them.
enum StepResultCoding {
    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return decoder
    }

    /// `value` decoded as `T`; a failure is a `DecodingError` at `codingPath`, so the caller names the field.
    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue, codingPath: [any CodingKey] = []) throws -> T {
        do {
            return try decoder().decode(T.self, from: JSON.canonical(value))
        } catch let error as DecodingError {
            guard !codingPath.isEmpty else { throw error }
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "\(error)"))
        }
    }

    /// The fields of a value that encodes as a JSON object.
    static func fields(of value: some Encodable) -> [String: JSONValue] {
        guard case let .object(fields) = try? JSON.decode(JSONValue.self, from: JSON.canonical(value), context: "a step output") else {
            preconditionFailure("\(type(of: value)) encodes as a JSON object")
        }
        return fields
    }
}
