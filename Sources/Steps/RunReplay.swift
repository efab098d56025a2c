import AdaptCore
import Foundation
import JobQueue
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

    public struct Report: Sendable, Equatable, Encodable {
        public let runID: String
        public let equal: Bool
        public let firstDifference: Difference?
        public let steps: [StepReport]

        enum CodingKeys: String, CodingKey {
            case equal, steps
            case runID = "run_id", firstDifference = "first_difference"
        }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(runID, forKey: .runID)
            try c.encode(equal, forKey: .equal)
            try c.encode(firstDifference, forKey: .firstDifference)  // an explicit null when equal
            try c.encode(steps, forKey: .steps)
        }
    }

    /// The state the run was recorded in.
    public let original: StepEnvironment
    public let queue: JobQueue
    /// An empty directory to replay in.
    public let scratch: StateDirectory
    public let log: @Sendable (String) -> Void

    public init(original: StepEnvironment, queue: JobQueue, scratch: StateDirectory, log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.original = original
        self.queue = queue
        self.scratch = scratch
        self.log = log
    }

    public func replay(_ runID: RunID) throws -> Report {
        let run = try queue.run(runID)
        guard case var .object(manifest) = run.manifest, let baseName = run.manifest["base_model"]?["name"]?.stringValue else {
            throw StepError.notAPipelineRun(run: runID.description, field: "base_model")
        }
        let jobs = try queue.jobs(matching: JobQueue.JobFilter(run: runID, limit: 10_000)).sorted { $0.id < $1.id }
        let done = jobs.filter { $0.state == .succeeded }
        guard !done.isEmpty else {
            throw StepError.replayNotPossible(run: runID.description, reason: "none of its steps has succeeded yet")
        }
        // Erased or expired inputs are gone by design: say so rather than fail on a missing blob.
        for job in done {
            if let erased = try ErasedInput.of(job, in: queue.database).first {
                throw StepError.inputErased(run: runID.description, step: erased.step, field: erased.field, sentence: erased.message)
            }
        }
        // The model is read from where the run found it; the scratch manifest names it by absolute path.
        var base = manifest["base_model"]?.objectValue ?? [:]
        base["name"] = .string(try original.modelURL(baseName).path)
        manifest["base_model"] = .object(base)

        try scratch.create()
        let database = try Database(path: scratch.database.path, durability: .normal)
        let environment = StepEnvironment(state: scratch, database: database, clock: original.clock,
                                          deviceRoot: original.deviceRoot, log: log)
        var replayed: [JobID: JSONValue] = [:]
        var reports: [StepReport] = []
        for job in done {
            guard let recorded = job.output else { continue }
            if let ranWith = StepRecord.recordedInput(of: recorded),
               let difference = Self.inputDifference(step: job.name, recorded: ranWith, replayed: job.input) {
                reports.append(StepReport(name: job.name, kind: job.kind, equal: false, seconds: 0))
                return Report(runID: runID.description, equal: false, firstDifference: difference, steps: reports)
            }
            try prepare(job, recorded: recorded, environment: environment)
            var ancestors: [String: JSONValue] = [:]
            for (kind, record) in try StepRunner.nearestSucceededAncestors(queue: queue, job: job.id) { ancestors[kind] = replayed[record.id] }
            let context = StepContext(environment: environment, name: job.name, input: job.input, manifest: .object(manifest),
                                      ancestors: ancestors, recorded: recorded)
            log("replaying \(job.name)")
            let start = original.clock.nowMilliseconds()
            guard case let .completed(output) = try StepRunner.run(kind: job.kind, context) else {
                throw StepError.replayNotPossible(run: runID.description, reason: "step \(job.name) was deferred by the device policy")
            }
            if let finalize = output.finalize { try database.transaction { try finalize(database) } }
            output.afterCommit?()
            let fresh = StepRecord.jobOutput(output, input: job.input, ancestors: ancestors)
            let actual = try JSON.decode(JSONValue.self, from: JSON.canonical(fresh), context: "replayed output")
            replayed[job.id] = actual
            let difference = Self.firstDifference(step: job.name, expected: recorded, actual: actual)
            reports.append(StepReport(name: job.name, kind: job.kind, equal: difference == nil,
                                      seconds: Double(original.clock.nowMilliseconds() - start) / 1000))
            if let difference {
                return Report(runID: runID.description, equal: false, firstDifference: difference, steps: reports)
            }
        }
        return Report(runID: runID.description, equal: true, firstDifference: nil, steps: reports)
    }

    /// Copies what `job` reads from outside the job table into the scratch state.
    private func prepare(_ job: JobRecord, recorded: JSONValue, environment: StepEnvironment) throws {
        let lineage = job.input["lineage"]?.stringValue ?? ""
        switch StepKind(rawValue: job.kind) {
        case .prune:
            let digest = try PruneOutput(jobOutput: recorded).inputs.bufferSnapshot
            let dump = try LineageDump.decode(try copy(digest), context: "buffer snapshot \(digest.short)")
            try ReplayStore(database: environment.database, clock: environment.clock).restore(dump)
        case .eval:
            if let incumbent = try EvalOutput(jobOutput: recorded).incumbent { _ = try copy(incumbent.adapterBlob) }
        case .promote:
            guard let digest = try PromoteOutput(jobOutput: recorded).inputs.activeAdapter.digest,
                  let name = ShortIdentifier(lineage) else { return }
            let registry = try AdapterRegistry(database: environment.database, blobs: environment.blobs, clock: environment.clock)
            guard try registry.active(lineage: name)?.adapterDigest != digest else { return }
            let version = try registry.register(adapterData: try copy(digest), lineage: name, metadata: AdapterMetadata())
            try registry.promote(version.reference, reason: .force, actor: ShortIdentifier("replay")!)
        default:
            break
        }
    }

    private func copy(_ digest: Digest) throws -> Data {
        let data = try original.blobs.get(digest)
        _ = try scratch.blobs.put(data)
        return data
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
