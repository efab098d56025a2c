import AdaptCore

/// How a step's output is laid out in its job row, and the digests replay compares.
///
/// A job's output is one JSON object: the step's `result` fields at the top level (so `adapt show` prints
/// e.g. `adapter_digest` or the gate's `outcome` directly), plus
/// - `input`: a copy of the job input the step ran with, so replay can name an input field that changed
///   since (`input.learning_rate`) rather than the first result it moved;
/// - `inputs`: digests of what the step read from outside the job table (base model, snapshots, adapters);
/// - `digests`: `{input, output}`, where `input` is the SHA-256 of the canonical JSON of the job's input, the
///   `inputs` and the output digests of the earlier steps it read, and `output` that of the result fields and
///   `inputs`;
/// - `timing`: wall-clock figures, and `registry`: version numbers (promote), both left out of every digest.
/// The same `digests` value is written into the run's manifest under `step_digests.<name>` when the step completes.
public enum StepRecord {
    public static let reservedKeys: Set<String> = ["input", "inputs", "digests", "timing", "registry"]

    /// The job output for `output` of a step that received `input` after the given ancestors.
    public static func jobOutput(_ output: StepOutput, input: JSONValue, ancestors: [String: JSONValue]) -> JSONValue {
        var fields = output.result
        precondition(reservedKeys.isDisjoint(with: fields.keys), "a step result may not use a reserved key")
        fields["input"] = input
        fields["inputs"] = .object(output.inputs)
        fields["timing"] = .object(output.timing)
        if !output.registry.isEmpty { fields["registry"] = .object(output.registry) }
        fields["digests"] = digests(result: output.result, inputs: output.inputs, input: input, ancestors: ancestors)
        return .object(fields)
    }

    static func digests(result: [String: JSONValue], inputs: [String: JSONValue], input: JSONValue,
                        ancestors: [String: JSONValue]) -> JSONValue {
        var compared = result
        compared["inputs"] = .object(inputs)
        let parents = ancestors.mapValues { outputDigest(of: $0).map(JSONValue.string) ?? .null }
        let inputDigest = JSON.digest(JSONValue.object(["input": input, "inputs": .object(inputs), "after": .object(parents)]))
        return .object(["input": .string(inputDigest.hex), "output": .string(JSON.digest(JSONValue.object(compared)).hex)])
    }

    /// The recorded output digest of a job output written by `jobOutput`.
    public static func outputDigest(of jobOutput: JSONValue) -> String? { jobOutput["digests"]?["output"]?.stringValue }
    public static func inputDigest(of jobOutput: JSONValue) -> String? { jobOutput["digests"]?["input"]?.stringValue }
    /// The job input recorded with the output; nil for outputs written before the input was recorded.
    public static func recordedInput(of jobOutput: JSONValue) -> JSONValue? { jobOutput["input"] }

    /// `value`'s leaves under `path`, in the order replay compares them (keys sorted, arrays element by
    /// element after their `count`).
    public static func leaves(of value: JSONValue, at path: String) -> [(field: String, value: JSONValue)] {
        var out: [(String, JSONValue)] = []
        flatten(path, value, into: &out)
        return out
    }

    /// The fields replay compares, in the order it compares them: each input digest first (`inputs.base_model`),
    /// then the result fields by name. Arrays are compared element by element (`losses[37]`), so a difference
    /// is named down to the first value that moved.
    public static func comparedFields(of jobOutput: JSONValue) -> [(field: String, value: JSONValue)] {
        guard case let .object(fields) = jobOutput else { return [] }
        var out: [(String, JSONValue)] = []
        for (key, value) in (fields["inputs"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
            out.append(("inputs.\(key)", value))
        }
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) where !reservedKeys.contains(key) {
            flatten(key, value, into: &out)
        }
        return out
    }

    private static func flatten(_ path: String, _ value: JSONValue, into out: inout [(String, JSONValue)]) {
        switch value {
        case let .array(items):
            out.append(("\(path).count", .int(items.count)))
            for (i, item) in items.enumerated() { flatten("\(path)[\(i)]", item, into: &out) }
        case let .object(fields):
            for (key, item) in fields.sorted(by: { $0.key < $1.key }) { flatten("\(path).\(key)", item, into: &out) }
        default:
            out.append((path, value))
        }
    }
}
