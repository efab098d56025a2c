import AdaptCore
import Foundation

/// A pipeline definition: the step graph and every parameter of every step, resolved with defaults.
///
/// `pipelines/nightly.json` states `Pipeline.nightly` in full (a test keeps the two equal). Users write their
/// own files with any subset of the fields; `Pipeline(json:)` fills in the rest and checks everything, naming
/// each problem by its JSON path. The canonical JSON of the resolved value is what `digest` hashes and what a
/// run's manifest records, so two files that resolve to the same pipeline have the same digest.
public struct Pipeline: Sendable, Equatable, Codable {
    /// The version of the file format this code reads and writes.
    public static let formatVersion = 1
    /// Seeds travel as JSON numbers; above 2^53 − 1 they would not survive a round trip through a double.
    public static let maximumSeed: UInt64 = (1 << 53) - 1

    public var format: Int
    public var name: String
    public var description: String
    /// A fixed seed for every run, or nil: each run then derives its seed from lineage and night.
    public var seed: UInt64?
    public var prune: PruneParameters
    public var privacy: PrivacyBudget
    public var sample: SampleParameters
    public var train: TrainParameters
    public var eval: EvalParameters
    public var device: DevicePolicy
    /// The graph, in file order; `PlannedRun` orders them topologically.
    public var steps: [PipelineStep]
    /// A program and its arguments, run with the run's outcome as JSON on stdin when a run ends (`adapt work`);
    /// nil: nobody is told.
    public var notify: [String]?

    public init(format: Int = Pipeline.formatVersion, name: String, description: String = "", seed: UInt64? = nil,
                prune: PruneParameters = .init(), privacy: PrivacyBudget = .init(), sample: SampleParameters = .init(),
                train: TrainParameters = .init(), eval: EvalParameters = .init(), device: DevicePolicy = .init(),
                steps: [PipelineStep], notify: [String]? = nil) {
        self.format = format
        self.name = name
        self.description = description
        self.seed = seed
        self.prune = prune
        self.privacy = privacy
        self.sample = sample
        self.train = train
        self.eval = eval
        self.device = device
        self.steps = steps
        self.notify = notify
    }

    /// The bundled nightly pipeline: prune → sample → train → eval → promote with every default.
    public static let nightly = Pipeline(
        name: "nightly",
        description: "Nightly personalisation: prune expired examples, sample tonight's training set, train a LoRA adapter, "
            + "compare it with the active one on the lineage's held-out set, promote it only if it is better.",
        steps: StepKind.allCases.enumerated().map { index, kind in
            PipelineStep(name: kind.rawValue, kind: kind, dependsOn: index == 0 ? [] : [StepKind.allCases[index - 1].rawValue],
                         timeoutSeconds: kind.nightlyTimeoutSeconds)
        })

    /// The SHA-256 of the canonical JSON of `definition`.
    public var digest: Digest { JSON.digest(definition) }

    /// The resolved pipeline as JSON without its `description`: everything that decides what a run does, and
    /// nothing else, so rewording a description changes neither the digest nor a replay.
    public var definition: JSONValue {
        guard case var .object(fields) = jsonValue else { preconditionFailure("a pipeline encodes as a JSON object") }
        fields["description"] = nil
        return .object(fields)
    }

    /// The resolved pipeline as a JSON value, every field present (what `adapt pipeline show` prints).
    public var jsonValue: JSONValue {
        do { return try JSONDecoder().decode(JSONValue.self, from: JSON.canonical(self)) } catch {
            preconditionFailure("a pipeline's own JSON does not decode as JSON: \(error)")
        }
    }

    // MARK: Loading

    /// Reads and validates a pipeline file; `PipelineError.invalid` lists every problem found.
    public static func load(contentsOf url: URL) throws -> Pipeline {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw PipelineError.unreadable(path: url.path, reason: UnreadablePath.reason(url.path))
        }
        return try parse(data, source: url.lastPathComponent)
    }

    /// Parses and validates pipeline JSON; `source` names it in messages (a file name, "standard input").
    public static func parse(_ data: Data, source: String) throws -> Pipeline {
        let document: JSONValue
        do { document = try JSONDecoder().decode(JSONValue.self, from: data) } catch {
            throw PipelineError.notJSON(source: source, reason: Self.syntaxError(in: data))
        }
        if let duplicate = JSONDuplicateKeys.first(in: data) {
            throw PipelineError.notJSON(source: source, reason: duplicate.description)
        }
        return try Pipeline(json: document, source: source)
    }

    /// Validates `json` and resolves defaults, or throws `PipelineError.invalid` with every problem.
    public init(json: JSONValue, source: String = "pipeline") throws {
        let reader = PipelineReader()
        let resolved = Self.read(json, reader: reader)
        guard reader.problems.isEmpty, let resolved else {
            throw PipelineError.invalid(source: source, problems: reader.problems)
        }
        self = resolved
    }

    /// Codable decoding goes through the same validation, so a decoded pipeline is always a valid one.
    public init(from decoder: Decoder) throws {
        let json = try JSONValue(from: decoder)
        do { try self.init(json: json) } catch let error as PipelineError {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.description))
        }
    }

    enum CodingKeys: String, CodingKey {
        case format, name, description, seed, prune, privacy, sample, train, eval, device, steps, notify
    }

    /// Every field is written, absent ones as null, so `show` documents the whole format.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(format, forKey: .format)
        try container.encode(name, forKey: .name)
        try container.encode(description, forKey: .description)
        if let seed { try container.encode(seed, forKey: .seed) } else { try container.encodeNil(forKey: .seed) }
        try container.encode(prune, forKey: .prune)
        try container.encode(privacy, forKey: .privacy)
        try container.encode(sample, forKey: .sample)
        try container.encode(train, forKey: .train)
        try container.encode(eval, forKey: .eval)
        try container.encode(device, forKey: .device)
        try container.encode(steps, forKey: .steps)
        // Written only when set: every pipeline without it keeps the digest (and replays the runs) it had before
        // the field existed.
        try container.encodeIfPresent(notify, forKey: .notify)
    }

    /// JSONDecoder on Linux says only "not valid JSON"; JSONSerialization says where, as a byte offset, which
    /// is turned into a line and column here.
    static func syntaxError(in data: Data) -> String {
        do {
            _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            return "the document is not a JSON value"
        } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "malformed JSON"
            guard let marker = detail.range(of: "character "),
                  let offset = Int(detail[marker.upperBound...].prefix { $0.isNumber }) else { return detail }
            let prefix = data.prefix(offset)
            let line = prefix.filter { $0 == UInt8(ascii: "\n") }.count + 1
            let column = offset - (prefix.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0) + 1
            let what = detail[..<marker.lowerBound].replacingOccurrences(of: " around ", with: "").trimmingCharacters(in: .whitespaces)
            return "\(what.prefix(1).lowercased() + what.dropFirst()) at line \(line), column \(column)"
        }
    }
}

/// The five step kinds a pipeline may use; each has its own worker executable.
public enum StepKind: String, Sendable, Codable, CaseIterable {
    case prune, sample, train, eval, promote

    /// Attempts before a step is discarded, unless the file says otherwise.
    public var defaultMaxAttempts: Int {
        switch self {
        case .train: return 5  // training is long and resumes from its checkpoint, so retrying is cheap
        default: return 3
        }
    }

    /// The bundled nightly pipeline's `timeout_seconds`: far above what the step takes on a default night, so only a
    /// hung step reaches it. A default night of the default model (100 train steps) trains in about 5 minutes on a
    /// quiet 2-core machine and 17 under load (3.7 and 9.9 s a step, BENCHMARKS.md), and the whole example night
    /// took 7 min 24 s under load; train gets 3 hours (room for a 1.7B model's 45-minute night, DESIGN.md, four times
    /// over, and a timed-out attempt resumes from its last checkpoint), eval 1 hour, the others 10 minutes.
    /// A step a pipeline file lists without `timeout_seconds` has none.
    public var nightlyTimeoutSeconds: Int {
        switch self {
        case .train: return 10_800
        case .eval: return 3_600
        default: return 600
        }
    }

    /// Lease length in seconds; a worker heartbeats well inside it, so it only bounds how long a dead
    /// worker's step waits before it is rescued.
    public var defaultLeaseSeconds: Int {
        switch self {
        case .train, .eval: return 120
        default: return 60
        }
    }
}

/// One node of the graph.
public struct PipelineStep: Sendable, Equatable, Codable {
    public var name: String
    public var kind: StepKind
    public var dependsOn: [String]
    public var maxAttempts: Int
    public var leaseSeconds: Int
    /// Lower runs first among ready steps (the job engine's order is priority, run_at, id).
    public var priority: Int
    /// How long one attempt may run before it is failed as timed out and retried (the job's `timeout_ms`); nil: no
    /// limit. Encoded only when set, so a pipeline without it keeps the digest it had before the field existed.
    public var timeoutSeconds: Int?

    public init(name: String, kind: StepKind, dependsOn: [String] = [], maxAttempts: Int? = nil,
                leaseSeconds: Int? = nil, priority: Int = 0, timeoutSeconds: Int? = nil) {
        self.name = name
        self.kind = kind
        self.dependsOn = dependsOn
        self.maxAttempts = maxAttempts ?? kind.defaultMaxAttempts
        self.leaseSeconds = leaseSeconds ?? kind.defaultLeaseSeconds
        self.priority = priority
        self.timeoutSeconds = timeoutSeconds
    }

    enum CodingKeys: String, CodingKey {
        case name, kind, priority
        case dependsOn = "depends_on", maxAttempts = "max_attempts", leaseSeconds = "lease_seconds"
        case timeoutSeconds = "timeout_seconds"
    }
}
