import AdaptCore
import Foundation
import JobQueue
import Model
import Pipelines
import Registry
import ReplayBuffer
import Storage

/// Deterministic replay (issue 7): re-executes a recorded nightly run in a scratch state directory and
/// compares every step's result with what the run recorded.
///
/// The scratch directory receives exactly the inputs the run's records name: the replay-buffer snapshot the
/// prune step took (restored as the lineage's buffer), the incumbent adapter the eval step compared against
/// and the adapter that was active when promote ran (registered and made active there), and the base model by
/// path (its digest is compared), each read from the step's typed recorded output. Each succeeded step then runs through the same body code as a worker, in
/// the run's order, with its recorded job input and the replayed outputs of the steps before it; prune reuses
/// the recorded clock reading. Before a step runs, the job input it will replay with is compared field by
/// field with the copy its output recorded (a changed learning rate is named `input.learning_rate`, not by
/// the adapter it moves); after it runs, the comparison walks `StepRecord.comparedFields` (input digests
/// first, then results, arrays element by element). Replay stops at the first difference.
public struct RunReplay {
    public struct Difference: Sendable, Equatable, Encodable {
        public let step: String
        public let field: String
        public let expected: JSONValue
        public let actual: JSONValue
    }

    public struct StepReport: Sendable, Equatable, Encodable {
        public let name: String
        public let kind: String
        public let equal: Bool
        public let seconds: Double
    }

    /// A step replayed under other arithmetic than it was recorded with (another OpenBLAS core type, build,
    /// thread count or architecture): why its bits may differ.
    public struct ArithmeticDifference: Sendable, Equatable, Encodable {
        public let step: String
        /// The recorded fields that differ from this machine's, as manifest paths (`arithmetic.train.core_type`).
        public let fields: [String]
        public let reason: String
        public let recorded: BLASArithmetic
        public let here: BLASArithmetic
        /// When OpenBLAS's core type is all that differs: why the replay was not pinned to the recorded one
        /// (a core type its user set under which the recorded kernels are not known to be safe, a CPU without them).
        public let notPinned: String?

        enum CodingKeys: String, CodingKey {
            case step, fields, reason, recorded, here
            case notPinned = "not_pinned"
        }
    }

    /// How the replay compared (`ReplayComparison`): `mode` `bits` or `tolerance` (some step was compared within
    /// it), the tolerance asked for, the first step compared within it, and the largest difference between a
    /// recorded and a replayed floating-point value (null when none differed).
    public struct ComparisonSummary: Sendable, Equatable, Encodable {
        public let mode: String
        public let tolerance: Double?
        public let fromStep: String?
        public let largestDifference: NumericDifference?

        enum CodingKeys: String, CodingKey {
            case mode, tolerance
            case fromStep = "from_step", largestDifference = "largest_difference"
        }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(mode, forKey: .mode)
            try c.encode(tolerance, forKey: .tolerance)
            try c.encode(fromStep, forKey: .fromStep)
            try c.encode(largestDifference, forKey: .largestDifference)
        }
    }

    public struct Report: Sendable, Equatable, Encodable {
        public let runID: String
        public let equal: Bool
        public let firstDifference: Difference?
        public let steps: [StepReport]
        /// The first replayed step whose arithmetic differs from the recorded one; nil when none does or the
        /// run recorded none (runs before the manifest's `arithmetic` section).
        public var arithmeticDifference: ArithmeticDifference? = nil
        public var comparison = ComparisonSummary(mode: "bits", tolerance: nil, fromStep: nil, largestDifference: nil)

        enum CodingKeys: String, CodingKey {
            case equal, steps, comparison
            case runID = "run_id", firstDifference = "first_difference", arithmeticDifference = "arithmetic_difference"
        }

        /// "every compared value is equal (5 steps)", saying from which step a tolerance was used and the largest
        /// difference it let through.
        public var equalSentence: String {
            var sentence = "every compared value is equal (\(steps.count) steps)"
            if let tolerance = comparison.tolerance, let from = comparison.fromStep {
                sentence += "; from \(from) on within tolerance \(tolerance)"
                if let d = comparison.largestDifference {
                    sentence += ", largest difference \(d.difference) at \(d.step).\(d.field)"
                }
            }
            return sentence
        }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(runID, forKey: .runID)
            try c.encode(equal, forKey: .equal)
            try c.encode(firstDifference, forKey: .firstDifference)  // an explicit null when equal
            try c.encode(steps, forKey: .steps)
            try c.encode(arithmeticDifference, forKey: .arithmeticDifference)
            try c.encode(comparison, forKey: .comparison)
        }
    }

    /// The state the run was recorded in.
    public let original: StepEnvironment
    /// The run's job tables, in the database `original.database` names.
    public let queue: any JobEngine
    /// An empty directory to replay in.
    public let scratch: StateDirectory
    public let comparison: ReplayComparison
    public let log: @Sendable (String) -> Void

    public init(original: StepEnvironment, queue: any JobEngine, scratch: StateDirectory, comparison: ReplayComparison = .bits,
                log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.original = original
        self.queue = queue
        self.scratch = scratch
        self.comparison = comparison
        self.log = log
    }

    public func replay(_ runID: RunID) throws -> Report {
        let run = try queue.run(runID)
        guard let baseName = run.manifest["base_model"]?["name"]?.stringValue else {
            throw StepError.notAPipelineRun(run: runID.description, field: "base_model")
        }
        let recorded = try RecordedRun.load(runID, queue: queue, connection: original.database, blobs: original.blobs)
        // The model is read from where the run found it.
        return try Self.replay(recorded, model: try original.modelURL(baseName), scratch: scratch, clock: original.clock,
                               deviceRoot: original.deviceRoot, comparison: comparison, log: log)
    }

    /// Replays `run` in the empty directory `scratch`, reading the base model from `model` (the scratch
    /// manifest names it by absolute path). Nothing is written outside `scratch`. Under `.bits`, a run whose
    /// recorded arithmetic differs from this machine's throws `StepError.arithmeticDiffers` before anything runs.
    public static func replay(_ run: RecordedRun, model: URL, scratch: StateDirectory, clock: any Clock,
                              deviceRoot: URL, comparison: ReplayComparison = .bits,
                              log: @escaping @Sendable (String) -> Void) throws -> Report {
        guard case var .object(manifest) = run.manifest, manifest["base_model"]?["name"]?.stringValue != nil else {
            throw StepError.notAPipelineRun(run: run.runID, field: "base_model")
        }
        guard !run.steps.isEmpty else {
            throw StepError.replayNotPossible(run: run.runID, reason: "none of its steps has succeeded yet")
        }
        var base = manifest["base_model"]?.objectValue ?? [:]
        base["name"] = .string(model.path)
        manifest["base_model"] = .object(base)
        let arithmeticDifferences = Self.arithmeticDifferences(run)
        if comparison == .bits, let first = arithmeticDifferences.first {
            throw StepError.arithmeticDiffers(run: run.runID, first)
        }
        let differingSteps = Set(arithmeticDifferences.map(\.step))
        var tolerant: TolerantComparison?
        var fromStep: String?

        try scratch.create()
        let database = try Database(path: scratch.database.path, durability: .normal)
        let environment = StepEnvironment(state: scratch, database: database, clock: clock, deviceRoot: deviceRoot, log: log)
        var replayed: [Int64: JSONValue] = [:]
        var reports: [StepReport] = []
        let arithmetic = arithmeticDifferences.first
        for difference in arithmeticDifferences {
            log("\(difference.step) runs under other arithmetic than recorded: \(difference.reason)")
        }
        func report(equal: Bool, _ difference: Difference?) -> Report {
            var largest = tolerant?.largest
            if largest == nil, let difference, let (a, b) = TolerantComparison.floatingPair(difference.expected, difference.actual) {
                largest = NumericDifference(step: difference.step, field: difference.field, expected: a, actual: b,
                                            difference: ReplayComparison.distance(expected: a, actual: b))
            }
            return Report(runID: run.runID, equal: equal, firstDifference: difference, steps: reports, arithmeticDifference: arithmetic,
                          comparison: ComparisonSummary(mode: tolerant == nil ? "bits" : "tolerance", tolerance: comparison.tolerance,
                                                        fromStep: fromStep, largestDifference: largest))
        }
        for step in run.steps {
            let recorded = step.output
            if let ranWith = StepRecord.recordedInput(of: recorded),
               let difference = inputDifference(step: step.name, recorded: ranWith, replayed: step.input) {
                reports.append(StepReport(name: step.name, kind: step.kind, equal: false, seconds: 0))
                return report(equal: false, difference)
            }
            try prepare(step, from: run, environment: environment)
            var ancestors: [String: JSONValue] = [:]
            for (kind, id) in step.ancestors { ancestors[kind] = replayed[id] }
            let context = StepContext(environment: environment, name: step.name, input: step.input, manifest: .object(manifest),
                                      ancestors: ancestors, recorded: recorded)
            log("replaying \(step.name)")
            let start = clock.nowMilliseconds()
            guard case let .completed(output) = try StepRunner.run(kind: step.kind, context) else {
                throw StepError.replayNotPossible(run: run.runID, reason: "step \(step.name) was deferred by the device policy")
            }
            if let finalize = output.finalize { try database.transaction { try finalize(database) } }
            output.afterCommit?()
            let fresh = StepRecord.jobOutput(output, input: step.input, ancestors: ancestors)
            let actual = try JSON.decode(JSONValue.self, from: JSON.canonical(fresh), context: "replayed output")
            replayed[step.id] = actual
            // From the first step whose bits cannot match, every later one reads its numbers: all within tolerance.
            if tolerant == nil, let tolerance = comparison.tolerance, differingSteps.contains(step.name) {
                tolerant = TolerantComparison(tolerance: tolerance)
                fromStep = step.name
            }
            let difference = tolerant != nil
                ? tolerant?.firstDifference(step: step.name, kind: step.kind, expected: recorded, actual: actual)
                : firstDifference(step: step.name, expected: recorded, actual: actual)
            reports.append(StepReport(name: step.name, kind: step.kind, equal: difference == nil,
                                      seconds: Double(clock.nowMilliseconds() - start) / 1000))
            if let difference { return report(equal: false, difference) }
        }
        return report(equal: true, nil)
    }

    /// The steps whose recorded arithmetic (the manifest's `arithmetic.<step>`) differs from what they run
    /// with here: this process's OpenBLAS and kernels at the thread count of the step's input. Runs recorded
    /// before the section existed have none.
    public static func arithmeticDifferences(_ run: RecordedRun) -> [ArithmeticDifference] {
        arithmeticDifferences(manifest: run.manifest, steps: run.steps)
    }

    public static func arithmeticDifferences(manifest: JSONValue, steps: [RecordedRun.Step]) -> [ArithmeticDifference] {
        steps.compactMap { step in
            guard let value = manifest[NightlyRun.arithmeticSection]?[step.name],
                  let recorded = try? JSON.decode(BLASArithmetic.self, from: JSON.canonical(value), context: "recorded arithmetic")
            else { return nil }
            // The forward kernels this machine runs for the step's own choice; the rest is this process's.
            let storage = (try? StepBaseWeights.storage(input: step.input, step: step.name, kind: "")) ?? .f32
            // At the count the step ran at: its input's, or the one an `auto` step recorded (and replays at).
            let threads = StepThreads.ranWith(input: step.input, output: step.output) ?? 1
            let here = StepBaseWeights.recorded(BLASArithmetic.current(threads: threads),
                                                storage: storage, input: step.input)
            guard let reason = recorded.difference(from: here) else { return nil }
            return ArithmeticDifference(step: step.name,
                                        fields: recorded.differingFields(from: here).map { "\(NightlyRun.arithmeticSection).\(step.name).\($0)" },
                                        reason: reason, recorded: recorded, here: here, notPinned: pinRefusal(recorded, here: here))
        }
    }

    /// Why a step recorded under `recorded` cannot be replayed pinned to its core type, when that is all that differs.
    private static func pinRefusal(_ recorded: BLASArithmetic, here: BLASArithmetic) -> String? {
        guard recorded.differingFields(from: here) == ["core_type"] else { return nil }
        if let refusal = BLASCoreType.repinRefusal(to: recorded.coreType) { return refusal }
        guard BLASCoreType.canRun(recorded.coreType, cpuFlags: BLASCoreType.cpuFlags()) else {
            return "this CPU cannot run \(recorded.coreType)'s kernels"
        }
        return nil
    }

    /// The OpenBLAS core type to execute the replaying process again with so that every step computes with the
    /// kernels it was recorded with: when the core type is all that differs, every differing step recorded the
    /// same one, this CPU runs it and it is safe under any core type the user set (`BLASCoreType`); nil otherwise.
    public static func coreTypeToPin(manifest: JSONValue, steps: [RecordedRun.Step]) -> String? {
        let differences = arithmeticDifferences(manifest: manifest, steps: steps)
        let types = Set(differences.map(\.recorded.coreType))
        guard let type = types.first, types.count == 1,
              differences.allSatisfy({ $0.recorded.differingFields(from: $0.here) == ["core_type"] }),
              BLASCoreType.repinRefusal(to: type) == nil, BLASCoreType.canRun(type, cpuFlags: BLASCoreType.cpuFlags()) else { return nil }
        return type
    }

    /// Copies what `step` reads from outside the job table into the scratch state.
    private static func prepare(_ step: RecordedRun.Step, from run: RecordedRun, environment: StepEnvironment) throws {
        let lineage = step.input["lineage"]?.stringValue ?? ""
        func copy(_ digest: Digest) throws -> Data {
            let data = try run.blob(digest)
            _ = try environment.blobs.put(data)
            return data
        }
        switch StepKind(rawValue: step.kind) {
        case .prune:
            let digest = try PruneOutput(jobOutput: step.output).inputs.bufferSnapshot
            let dump = try LineageDump.decode(try copy(digest), context: "buffer snapshot \(digest.short)")
            try ReplayStore(database: environment.database, clock: environment.clock).restore(dump)
        case .sample:
            // The adapter the train step starts from, as the sample step fixed it.
            if case let .some(.some(parent)) = try SampleOutput(jobOutput: step.output).weightsParent { _ = try copy(parent.adapterBlob) }
        case .eval:
            if let incumbent = try EvalOutput(jobOutput: step.output).incumbent { _ = try copy(incumbent.adapterBlob) }
        case .promote:
            guard let digest = try PromoteOutput(jobOutput: step.output).inputs.activeAdapter.digest,
                  let name = ShortIdentifier(lineage) else { return }
            let registry = try AdapterRegistry(connection: environment.database, blobs: environment.blobs, clock: environment.clock)
            guard try registry.active(lineage: name)?.adapterDigest != digest else { return }
            let version = try registry.register(adapterData: try copy(digest), lineage: name, metadata: AdapterMetadata())
            try registry.promote(version.reference, reason: .force, actor: ShortIdentifier("replay")!)
        default:
            break
        }
    }

    /// The first field of the job input that differs from the one the step ran with: `input.<field>`, the
    /// recorded value as `expected`, null for a field only one side has.
    static func inputDifference(step: String, recorded: JSONValue, replayed: JSONValue) -> Difference? {
        let want = StepRecord.leaves(of: recorded, at: "input")
        let got = StepRecord.leaves(of: replayed, at: "input")
        let gotByField = Dictionary(got.map { ($0.field, $0.value) }, uniquingKeysWith: { first, _ in first })
        let wantFields = Set(want.map(\.field))
        for (field, value) in want {
            let other = gotByField[field] ?? .null
            if gotByField[field] == nil || JSON.canonicalString(other) != JSON.canonicalString(value) {
                return Difference(step: step, field: field, expected: value, actual: other)
            }
        }
        if let extra = got.first(where: { !wantFields.contains($0.field) }) {
            return Difference(step: step, field: extra.field, expected: .null, actual: extra.value)
        }
        return nil
    }

    /// The first compared field whose value differs, or whose presence does.
    static func firstDifference(step: String, expected: JSONValue, actual: JSONValue) -> Difference? {
        let want = StepRecord.comparedFields(of: expected)
        let got = StepRecord.comparedFields(of: actual)
        let gotByField = Dictionary(got.map { ($0.field, $0.value) }, uniquingKeysWith: { first, _ in first })
        var inputDigestChecked = false
        for (field, value) in want {
            // Once the input digests (`inputs.*`) agree, a different `digests.input` can only come from the job
            // input: named that way, before any result, for an output written before the input was recorded
            // with it (newer ones are compared field by field before the step runs).
            if !inputDigestChecked, !field.hasPrefix("inputs.") {
                inputDigestChecked = true
                if let difference = inputDigestDifference(step: step, expected: expected, actual: actual) { return difference }
            }
            let other = gotByField[field] ?? .null
            if JSON.canonicalString(other) != JSON.canonicalString(value) {
                return Difference(step: step, field: field, expected: value, actual: other)
            }
        }
        if !inputDigestChecked, let difference = inputDigestDifference(step: step, expected: expected, actual: actual) {
            return difference
        }
        let wantFields = Set(want.map(\.field))
        if let extra = got.first(where: { !wantFields.contains($0.field) }) {
            return Difference(step: step, field: extra.field, expected: .null, actual: extra.value)
        }
        if let a = StepRecord.outputDigest(of: expected), let b = StepRecord.outputDigest(of: actual), a != b {
            return Difference(step: step, field: "digests.output", expected: .string(a), actual: .string(b))
        }
        return nil
    }

    private static func inputDigestDifference(step: String, expected: JSONValue, actual: JSONValue) -> Difference? {
        guard let a = StepRecord.inputDigest(of: expected), let b = StepRecord.inputDigest(of: actual), a != b else { return nil }
        return Difference(step: step, field: "digests.input", expected: .string(a), actual: .string(b))
    }
}
