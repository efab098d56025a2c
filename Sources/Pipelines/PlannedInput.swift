import AdaptCore

/// What every planned step's input carries, and typed access to the rest of it for the step bodies.
///
/// `plan` writes each section with the same snake_case keys its Codable type reads, so a step body can do
/// `try PlannedInput.parameters(TrainParameters.self, from: job.input)` and `try PlannedInput(job.input)`.
public struct PlannedInput: Sendable, Equatable, Codable {
    public let lineage: String
    public let night: Night
    public let seed: UInt64

    public init(lineage: String, night: Night, seed: UInt64) {
        self.lineage = lineage
        self.night = night
        self.seed = seed
    }

    /// Reads lineage, night and seed from a step's input; throws `CoreError.invalidJSON` naming what is missing.
    public init(_ input: JSONValue) throws {
        self = try JSON.decode(PlannedInput.self, from: JSON.canonical(input), context: "the step's input")
    }

    /// Decodes a parameter section (`PruneParameters`, `SampleParameters`, `PrivacyBudget`, `TrainParameters`,
    /// `EvalParameters`) from a step's input, or `DevicePolicy` from the train input's `device` field.
    public static func parameters<T: Decodable>(_ type: T.Type, from input: JSONValue) throws -> T {
        try JSON.decode(type, from: JSON.canonical(input), context: "the step's input (\(T.self))")
    }
}
