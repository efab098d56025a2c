import AdaptCore

/// What `enqueue` takes: a DAG of steps, built by the pipeline layer (or read from a JSON file).
///
/// JSON form: `{"kind", "name"?, "unique_key"?, "manifest"?, "steps": [{"name", "kind", "input"?,
/// "depends_on"?, "priority"?, "max_attempts"?, "run_at"?, "lease_ms"?, "timeout_ms"?}]}`; `run_at` is milliseconds
/// since the epoch.
public struct RunDescription: Codable, Equatable, Sendable {
    /// What sort of run this is (`nightly`, `noop`); shown as the run's `kind`.
    public var kind: String
    /// A label for people; defaults to the kind.
    public var name: String
    /// Enqueueing twice with the same key returns the first run (DESIGN.md: lineage + night).
    public var uniqueKey: String?
    /// Whatever the pipeline layer wants to keep with the run (`adapt show RUN` prints it).
    public var manifest: JSONValue
    public var steps: [Step]

    public struct Step: Codable, Equatable, Sendable {
        /// Unique within the run; dependencies refer to it.
        public var name: String
        /// The worker kind that claims it.
        public var kind: String
        public var input: JSONValue
        public var dependsOn: [String]
        /// Lower runs first.
        public var priority: Int
        public var maxAttempts: Int
        /// Not before this time (ms since the epoch); nil means as soon as its parents succeed.
        public var runAt: Int64?
        /// The lease of each claim of this step; nil leaves it to the claiming worker (`ClaimRequest`).
        public var leaseMilliseconds: Int64?
        /// How long each attempt may run (`JobTimeout`); nil leaves it to the claiming worker's, if it has one.
        public var timeoutMilliseconds: Int64?

        public init(name: String, kind: String, input: JSONValue = .object([:]), dependsOn: [String] = [],
                    priority: Int = 0, maxAttempts: Int = RunDescription.defaultMaxAttempts, runAt: Int64? = nil,
                    leaseMilliseconds: Int64? = nil, timeoutMilliseconds: Int64? = nil) {
            self.name = name
            self.kind = kind
            self.input = input
            self.dependsOn = dependsOn
            self.priority = priority
            self.maxAttempts = maxAttempts
            self.runAt = runAt
            self.leaseMilliseconds = leaseMilliseconds
            self.timeoutMilliseconds = timeoutMilliseconds
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case name, kind, input, priority
            case dependsOn = "depends_on", maxAttempts = "max_attempts", runAt = "run_at", leaseMilliseconds = "lease_ms"
            case timeoutMilliseconds = "timeout_ms"
        }

        public init(from decoder: Decoder) throws {
            try decoder.rejectUnknownFields(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(name: try c.decode(String.self, forKey: .name),
                      kind: try c.decode(String.self, forKey: .kind),
                      input: try c.decodeIfPresent(JSONValue.self, forKey: .input) ?? .object([:]),
                      dependsOn: try c.decodeIfPresent([String].self, forKey: .dependsOn) ?? [],
                      priority: try c.decodeIfPresent(Int.self, forKey: .priority) ?? 0,
                      maxAttempts: try c.decodeIfPresent(Int.self, forKey: .maxAttempts) ?? RunDescription.defaultMaxAttempts,
                      runAt: try c.decodeIfPresent(Int64.self, forKey: .runAt),
                      leaseMilliseconds: try c.decodeIfPresent(Int64.self, forKey: .leaseMilliseconds),
                      timeoutMilliseconds: try c.decodeIfPresent(Int64.self, forKey: .timeoutMilliseconds))
        }
    }

    public static let defaultMaxAttempts = 3

    /// `run_at` from the epoch to the end of year 9999: later times only overflow the arithmetic of waiting.
    public static let runAtRange: ClosedRange<Int64> = 0...253_402_300_799_999

    public init(kind: String, name: String? = nil, uniqueKey: String? = nil, manifest: JSONValue = .object([:]),
                steps: [Step]) {
        self.kind = kind
        self.name = name ?? kind
        self.uniqueKey = uniqueKey
        self.manifest = manifest
        self.steps = steps
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case kind, name, manifest, steps
        case uniqueKey = "unique_key"
    }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownFields(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(kind: try c.decode(String.self, forKey: .kind),
                  name: try c.decodeIfPresent(String.self, forKey: .name),
                  uniqueKey: try c.decodeIfPresent(String.self, forKey: .uniqueKey),
                  manifest: try c.decodeIfPresent(JSONValue.self, forKey: .manifest) ?? .object([:]),
                  steps: try c.decode([Step].self, forKey: .steps))
    }

    /// Checks the description is a non-empty DAG of uniquely named steps; throws `JobQueueError.invalidRun`.
    /// Returns the steps in a topological order (parents first, otherwise in the given order).
    @discardableResult
    public func validate() throws -> [Step] {
        func fail(_ problem: RunDescriptionProblem) -> JobQueueError { .invalidRun(problem) }
        if kind.isEmpty { throw fail(.emptyKind) }
        if steps.isEmpty { throw fail(.noSteps) }
        var index: [String: Int] = [:]
        for (i, step) in steps.enumerated() {
            if step.name.isEmpty { throw fail(.emptyStepName(index: i)) }
            if step.kind.isEmpty { throw fail(.emptyStepKind(step: step.name)) }
            if step.maxAttempts < 1 { throw fail(.invalidMaxAttempts(step: step.name, value: step.maxAttempts)) }
            if let lease = step.leaseMilliseconds, !ClaimRequest.leaseRange.contains(Int(lease)) {
                throw fail(.invalidLease(step: step.name, milliseconds: lease))
            }
            if let timeout = step.timeoutMilliseconds, !JobTimeout.range.contains(timeout) {
                throw fail(.invalidTimeout(step: step.name, milliseconds: timeout))
            }
            if let runAt = step.runAt, !RunDescription.runAtRange.contains(runAt) {
                throw fail(.invalidRunAt(step: step.name, milliseconds: runAt))
            }
            if index[step.name] != nil { throw fail(.duplicateStep(step.name)) }
            index[step.name] = i
        }
        for step in steps {
            for dependency in step.dependsOn where index[dependency] == nil {
                throw fail(.unknownDependency(step: step.name, dependency: dependency))
            }
        }
        // Without dependencies the given order already has parents first.
        if steps.allSatisfy({ $0.dependsOn.isEmpty }) { return steps }
        // Depth-first search with three colours and an explicit stack (a run may have a long chain of steps,
        // too deep for recursion); a grey node met again closes a cycle, reported from its first member so
        // the message lists the whole loop.
        var colour = [UInt8](repeating: 0, count: steps.count)  // 0 white, 1 grey, 2 black
        var order: [Step] = []
        var path: [(step: Int, next: Int)] = []  // grey steps, each with its next dependency to visit
        for root in steps.indices where colour[root] == 0 {
            colour[root] = 1
            path.append((root, 0))
            while let (i, next) = path.last {
                let dependencies = steps[i].dependsOn
                guard next < dependencies.count else {
                    path.removeLast()
                    colour[i] = 2
                    order.append(steps[i])
                    continue
                }
                path[path.count - 1].next += 1
                let j = index[dependencies[next]]!
                if colour[j] == 1 {
                    let start = path.firstIndex { $0.step == j } ?? 0
                    throw fail(.cycle((path[start...].map(\.step) + [j]).map { steps[$0].name }))
                }
                if colour[j] == 0 {
                    colour[j] = 1
                    path.append((j, 0))
                }
            }
        }
        return order
    }
}
