/// Why `adapt eval voice` cannot check a lineage; each says what to do.
public enum VoiceCheckError: Error, CustomStringConvertible {
    case unknownLineage(String)
    case noHeldOutExamples(String)
    case noTrainingCompletions(String)
    case noActiveAdapter(String)
    case missingModel(path: String, isDefault: Bool)

    public var description: String {
        switch self {
        case let .unknownLineage(lineage):
            return "no lineage \(lineage) in this state; 'adapt data stats' lists the lineages, "
                + "'adapt data import FILE --lineage \(lineage)' starts one"
        case let .noHeldOutExamples(lineage):
            return "lineage \(lineage) has no held-out examples to prompt with; import some "
                + "('adapt data import FILE --lineage \(lineage) --held-out')"
        case let .noTrainingCompletions(lineage):
            return "lineage \(lineage) has no training examples to learn its phrases from; import some with "
                + "'adapt data import FILE --lineage \(lineage)'"
        case let .noActiveAdapter(lineage):
            return "lineage \(lineage) has no active adapter to check; run a night first "
                + "('adapt enqueue nightly --lineage \(lineage)', then 'adapt work'), or promote a version"
        case let .missingModel(path, isDefault):
            return "no model file at \(path); " + (isDefault ? "run scripts/fetch-model, or pass --model FILE" : "pass --model with an existing GGUF file")
        }
    }
}
