import AdaptCore

/// Checks a planned step's input by the rules `adapt pipeline check` applies to the pipeline file it would
/// have come from.
///
/// A step input need not come from a pipeline: `adapt enqueue run` takes any JSON. Without this check a
/// prune step with `ttl_days: -1` would delete every example of its lineage and `Int64.min` would trap. So a
/// step body refuses, before it touches anything, any input a checked pipeline could not have produced:
/// lineage, night and seed as `plan` writes them, and every parameter `Pipeline.parameters(for:)` writes for
/// the kind, present and within the bounds the pipeline reader enforces. Fields the kind does not read are
/// ignored.
public enum StepInputCheck {
    /// Every problem of `input` for a step of `kind`, each a sentence naming the input field; empty when valid.
    public static func problems(_ input: JSONValue, kind: StepKind) -> [PipelineProblem] {
        let reader = PipelineReader()
        guard let fields = input.objectValue else {
            reader.report("", "a step's input must be a JSON object, got \(PipelineReader.render(input))")
            return reader.problems
        }
        let common = ObjectReader(path: "", fields: fields, reader: reader)
        _ = common.requiredText("lineage", "a lineage name of \(Lineage.rule)",
                                where: Lineage.isValid)
        _ = common.requiredText("night", "a date written YYYY-MM-DD", where: { (try? Night(parsing: $0)) != nil })
        if fields["seed"] == nil {
            reader.report("seed", "seed is required: an integer from 0 to \(Pipeline.maximumSeed)")
        } else {
            _ = common.integer("seed", default: 0, minimum: 0, maximum: Int(Pipeline.maximumSeed),
                               "an integer from 0 to \(Pipeline.maximumSeed)")
        }

        // Only the fields of each section go to its reader, so its unknown-field report stays quiet about
        // lineage, night and seed.
        func section(_ keys: [String], optional: [String] = [], at path: String = "", in source: [String: JSONValue] = fields) -> ObjectReader {
            requirePresent(keys, in: source, path: path, kind: kind, reader: reader)
            return ObjectReader(path: path, fields: source.filter { keys.contains($0.key) || optional.contains($0.key) }, reader: reader)
        }
        switch kind {
        case .prune:
            // `ttl_retires_adapters` is written only when true (and was absent before it existed).
            _ = Pipeline.readPrune(section(keys(of: PruneParameters()), optional: ["ttl_retires_adapters"]))
        case .sample:
            _ = Pipeline.readSample(section(keys(of: SampleParameters())))
            _ = Pipeline.readPrivacy(section(keys(of: PrivacyBudget())))
            // Absent in steps planned before warm starts: those fix no weights parent.
            _ = ObjectReader(path: "", fields: fields.filter { $0.key == TrainInit.sampleField }, reader: reader)
                .choice(TrainInit.sampleField, default: TrainInit.fresh)
        case .train:
            // `chat_format` is optional: absent, the model's template formats the examples. `base_weights` too:
            // absent, the step keeps the base in f32, as every step planned before the field did; and
            // `forward_products`: absent, sgemm; `init`: absent, from zero.
            let optional = ["chat_format", "base_weights", "forward_products", "init"]
            _ = Pipeline.readTrain(section(keys(of: TrainParameters()).filter { !optional.contains($0) }, optional: optional))
            requirePresent(["device"], in: fields, path: "", kind: kind, reader: reader)
            if let device = fields["device"] {
                if let deviceFields = device.objectValue {
                    _ = Pipeline.readDevice(section(keys(of: DevicePolicy()), at: "device", in: deviceFields))
                } else {
                    reader.report("device", "device must be an object, got \(PipelineReader.render(device))")
                }
            }
        case .eval:
            // `on_worse` came later: an eval step planned before it has none, and keeps a worse night's data; so did
            // `min_effect` and `canary` (no minimum, no forgetting guard).
            let later = ["on_worse", "min_effect", CanaryGuard.field]
            let required = keys(of: EvalParameters()).filter { !later.contains($0) }
            requirePresent(required, in: fields, path: "", kind: kind, reader: reader)
            _ = Pipeline.readEval(ObjectReader(path: "", fields: fields.filter { required.contains($0.key) || later.contains($0.key) },
                                               reader: reader))
            // Scored the way train saw the sequences: the same two train fields, under the same rules.
            _ = Pipeline.readTrain(section(["max_length", "blas_threads"], optional: ["chat_format", "base_weights", "forward_products"]))
        case .promote:
            break
        }
        // Absent in steps planned before each rule; its one value in every step planned since.
        for rule in LaterRule.all where rule.kinds.contains(kind) {
            if let problem = rule.problem(in: input) { reader.report(rule.field, problem) }
        }
        return reader.problems
    }

    /// The snake_case keys a parameter section encodes to (all of them: `plan` writes every one).
    private static func keys<T: Encodable>(of defaults: T) -> [String] {
        Pipeline.objectFields(defaults).keys.sorted()
    }

    private static func requirePresent(_ keys: [String], in fields: [String: JSONValue], path: String, kind: StepKind,
                                       reader: PipelineReader) {
        for key in keys where fields[key] == nil {
            let full = path.isEmpty ? key : "\(path).\(key)"
            reader.report(full, "\(full) is required: 'adapt enqueue nightly' writes it into every \(kind.rawValue) step's input")
        }
    }
}
