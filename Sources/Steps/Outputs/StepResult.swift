import AdaptCore
import Pipelines
import Storage

/// A step's output as a type, shared by the body that writes it, the later steps that read it and replay.
///
/// Encoded, it is the job output's fields apart from the bookkeeping `StepRecord` adds (`input`, `digests`,
/// `timing`, `registry`); its `inputs` field, where a step has one, is the job output's `inputs` section (the
/// digests of what the step read from outside the job table). The field names are the `--json` contract of
/// `adapt show`, and the output digests replay compares are taken over this encoding: a run recorded by an
/// earlier build must decode and encode back to the same bytes. So fields are only ever added, as optionals a
/// step leaves out for the runs that were planned without them (the eval step's `on_worse` fields), and an
/// absent value is written as an explicit null wherever the step always wrote the field.
public protocol StepResult: Codable, Sendable {
    /// The kind of step that writes it.
    static var kind: StepKind { get }
}

extension StepResult {
    /// The typed output of `jobOutput`, a job output written by `StepRecord.jobOutput` (the reserved keys are
    /// ignored), or `StepError.malformedOutput` naming the first field that does not fit.
    public init(jobOutput: JSONValue) throws {
        do {
            self = try StepResultCoding.decode(Self.self, from: jobOutput)
        } catch let error as DecodingError {
            throw StepError.malformedOutput(step: Self.kind.rawValue, field: Self.field(of: error))
        }
    }

    /// The encoded fields: the job output's result fields, with `inputs` among them when the step has one.
    var fields: [String: JSONValue] { StepResultCoding.fields(of: self) }

    /// `inputs.buffer_snapshot`, `gate.outcome`: where in the output a decoding error happened.
    private static func field(of error: DecodingError) -> String {
        let path: [any CodingKey]
        switch error {
        case let .keyNotFound(key, context): path = context.codingPath + [key]
        case let .typeMismatch(_, context), let .valueNotFound(_, context), let .dataCorrupted(context): path = context.codingPath
        @unknown default: path = []
        }
        let names = path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
        return names.isEmpty ? "(the whole output)" : names.dropFirst().reduce(names[0]) { $0 + ($1.hasPrefix("[") ? $1 : "." + $1) }
    }
}

extension StepOutput {
    /// The output of a step that produced `typed`: its fields are the result, its `inputs` field the inputs.
    public init(_ typed: some StepResult, timing: [String: JSONValue] = [:], registry: [String: JSONValue] = [:],
                finalize: (@Sendable (any SQLConnection) throws -> Void)? = nil, afterCommit: (@Sendable () -> Void)? = nil) {
        var result = typed.fields
        let inputs = result.removeValue(forKey: "inputs")?.objectValue ?? [:]
        self.init(result: result, inputs: inputs, timing: timing, registry: registry, finalize: finalize, afterCommit: afterCommit)
    }
}

extension StepContext {
    /// The typed output of the nearest earlier step of `T`'s kind: `StepError.missingAncestor` when the run has
    /// none, `malformedOutput` when it does not decode.
    public func output<T: StepResult>(of type: T.Type) throws -> T {
        try T(jobOutput: try ancestor(T.kind.rawValue))
    }

    /// The same, or nil when the run has no earlier step of that kind.
    func outputIfAny<T: StepResult>(of type: T.Type) throws -> T? {
        try ancestors[T.kind.rawValue].map(T.init(jobOutput:))
    }

    /// This step's own output as the run recorded it: nil in a live run.
    func recordedOutput<T: StepResult>(_ type: T.Type) throws -> T? {
        try recorded.map(T.init(jobOutput:))
    }
}
