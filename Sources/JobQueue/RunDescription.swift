import AdaptCore

/// What `enqueue` takes: a DAG of steps, built by the pipeline layer (or read from a JSON file).
///
/// JSON form: `{"kind", "name"?, "unique_key"?, "manifest"?, "steps": [{"name", "kind", "input"?,
/// "depends_on"?, "priority"?, "max_attempts"?, "run_at"?, "lease_ms"?}]}`; `run_at` is milliseconds since the
/// epoch.
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

        public init(name: String, kind: String, input: JSONValue = .object([:]), dependsOn: [String] = [],
                    priority: Int = 0, maxAttempts: Int = RunDescription.defaultMaxAttempts, runAt: Int64? = nil,
                    leaseMilliseconds: Int64? = nil) {
            self.name = name
            self.kind = kind
            self.input = input
            self.dependsOn = dependsOn
            self.priority = priority
            self.maxAttempts = maxAttempts
            self.runAt = runAt
            self.leaseMilliseconds = leaseMilliseconds
        }

        enum CodingKeys: String, CodingKey {
            case name, kind, input, priority
            case dependsOn = "depends_on", maxAttempts = "max_attempts", runAt = "run_at", leaseMilliseconds = "lease_ms"
        }

        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(name: try c.decode(String.self, forKey: .name),
                      kind: try c.decode(String.self, forKey: .kind),
                      input: try c.decodeIfPresent(JSONValue.self, forKey: .input) ?? .object([:]),
                      dependsOn: try c.decodeIfPresent([String].self, forKey: .dependsOn) ?? [],
                      priority: try c.decodeIfPresent(Int.self, forKey: .priority) ?? 0,
                      maxAttempts: try c.decodeIfPresent(Int.self, forKey: .maxAttempts) ?? RunDescription.defaultMaxAttempts,
                      runAt: try c.decodeIfPresent(Int64.self, forKey: .runAt),
                      leaseMilliseconds: try c.decodeIfPresent(Int64.self, forKey: .leaseMilliseconds))
        }
    }

    public static let defaultMaxAttempts = 3

    public init(kind: String, name: String? = nil, uniqueKey: String? = nil, manifest: JSONValue = .object([:]),
                steps: [Step]) {
        self.kind = kind
        self.name = name ?? kind
        self.uniqueKey = uniqueKey
        self.manifest = manifest
        self.steps = steps
    }

    enum CodingKeys: String, CodingKey {
        case kind, name, manifest, steps
        case uniqueKey = "unique_key"
    }

    public init(from decoder: Decoder) throws {
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
        // Depth-first search with three colours; a grey node met again closes a cycle, which we report
        // from its first member so the message lists the whole loop.
        var colour = [Int](repeating: 0, count: steps.count)  // 0 white, 1 grey, 2 black
        var order: [Step] = []
        var path: [Int] = []
        func visit(_ i: Int) throws {
            if colour[i] == 2 { return }
            if colour[i] == 1 {
                let start = path.firstIndex(of: i) ?? 0
                throw fail(.cycle((path[start...] + [i]).map { steps[$0].name }))
            }
            colour[i] = 1
            path.append(i)
            for dependency in steps[i].dependsOn { try visit(index[dependency]!) }
            path.removeLast()
            colour[i] = 2
            order.append(steps[i])
        }
        for i in steps.indices { try visit(i) }
        return order
    }
}
