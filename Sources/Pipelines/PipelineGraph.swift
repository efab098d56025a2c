/// Checks on the step graph as a whole, and the order a run's steps are listed in.
enum PipelineGraph {
    /// What a step entry said, as far as it could be read (a bad field leaves its part nil).
    struct Node {
        let index: Int
        let name: String?
        let kind: StepKind?
        let dependsOn: [String]?
        var path: String { "steps[\(index)]" }
        var label: String { name.map { "\(path) (\($0))" } ?? path }
    }

    /// The step kinds each kind needs upstream, and why (DESIGN.md: nothing is promoted but through the gate).
    static let requiredUpstream: [StepKind: (StepKind, String)] = [
        .train: (.sample, "it trains on the set a sample step draws"),
        .eval: (.train, "it evaluates the adapter a train step makes"),
        .promote: (.eval, "nothing is promoted without the gate"),
    ]

    /// Duplicate names, unknown or self dependencies, cycles, and kinds missing their upstream step.
    static func check(_ nodes: [Node], reader: PipelineReader) {
        var firstIndex: [String: Int] = [:]
        for node in nodes {
            guard let name = node.name else { continue }
            if let earlier = firstIndex[name] {
                reader.report("\(node.path).name", "\(node.path).name \"\(name)\" is already the name of steps[\(earlier)]; "
                              + "step names must be unique")
            } else {
                firstIndex[name] = node.index
            }
        }
        let names = nodes.compactMap(\.name)
        var structurallySound = true
        for node in nodes {
            var listed: Set<String> = []
            for (position, dependency) in (node.dependsOn ?? []).enumerated() {
                let path = "\(node.path).depends_on[\(position)]"
                if dependency == node.name {
                    reader.report(path, "\(path) names the step itself; a step cannot depend on itself")
                    structurallySound = false
                } else if firstIndex[dependency] == nil {
                    var message = "\(path) names \"\(PipelineError.abbreviated(dependency))\", which is not a step of this pipeline"
                    if let near = NearestName.suggestion(for: dependency, among: names) { message += "; did you mean \"\(near)\"?" }
                    else { message += " (steps: \(names.joined(separator: ", ")))" }
                    reader.report(path, message)
                    structurallySound = false
                } else if !listed.insert(dependency).inserted {
                    reader.report(path, "\(path) repeats \"\(dependency)\"; list each dependency once")
                }
            }
        }
        guard structurallySound, names.count == Set(names).count else { return }

        let byName = Dictionary(uniqueKeysWithValues: nodes.compactMap { node in node.name.map { ($0, node) } })
        if let cycle = findCycle(nodes, byName: byName) {
            reader.report("steps", "steps form a cycle: \(cycle.joined(separator: " → ")); the graph must have no cycles")
            return
        }
        let upstreamKinds = self.upstreamKinds(nodes, byName: byName)
        for node in nodes {
            guard let kind = node.kind, let (needed, why) = requiredUpstream[kind], let name = node.name else { continue }
            if !(upstreamKinds[name] ?? []).contains(needed) {
                reader.report("\(node.path).depends_on", "\(node.label) is a \(kind.rawValue) step and must depend, directly "
                              + "or through other steps, on \(needed == .eval ? "an" : "a") \(needed.rawValue) step: \(why)")
            }
        }
    }

    /// The first cycle met in a depth-first walk from each step in file order, as names from a step back to itself.
    ///
    /// The walk keeps its own stack instead of recursing: a pipeline file can chain 100,000 steps, and a
    /// recursive walk that deep overflows the thread's stack (SIGSEGV) instead of answering.
    static func findCycle(_ nodes: [Node], byName: [String: Node]) -> [String]? {
        enum Mark { case visiting, done }
        var marks: [String: Mark] = [:]
        // The path being walked: each step with the position of the next dependency to follow.
        var path: [(name: String, next: Int)] = []
        var onPath: [String: Int] = [:]  // name → its position in `path`
        for root in nodes {
            guard let rootName = root.name, marks[rootName] == nil else { continue }
            marks[rootName] = .visiting
            path.append((rootName, 0))
            onPath[rootName] = 0
            while let top = path.last {
                let dependencies = byName[top.name]?.dependsOn ?? []
                guard top.next < dependencies.count else {
                    path.removeLast()
                    onPath[top.name] = nil
                    marks[top.name] = .done
                    continue
                }
                path[path.count - 1].next += 1
                let dependency = dependencies[top.next]
                switch marks[dependency] {
                case .done?:
                    continue
                case .visiting?:
                    let start = onPath[dependency] ?? 0
                    let cycle = path[start...].map(\.name) + [dependency]
                    // The walk follows depends_on (downstream → upstream); print the cycle in execution order.
                    return cycle.reversed()
                case nil:
                    marks[dependency] = .visiting
                    onPath[dependency] = path.count
                    path.append((dependency, 0))
                }
            }
        }
        return nil
    }

    /// For each step, the kinds of all the steps it depends on directly or not, in one pass over the steps in
    /// dependency order (the graph has no cycle when this is called): linear in steps and edges, where asking
    /// each step for its ancestors would be quadratic on a long chain.
    static func upstreamKinds(_ nodes: [Node], byName: [String: Node]) -> [String: Set<StepKind>] {
        let order = topologicalOrder(nodes.compactMap { node in
            node.name.map { (name: $0, dependsOn: node.dependsOn ?? []) }
        })
        var kinds: [String: Set<StepKind>] = [:]
        for (name, dependsOn) in order.entries {
            var upstream: Set<StepKind> = []
            for dependency in dependsOn {
                if let kind = byName[dependency]?.kind { upstream.insert(kind) }
                upstream.formUnion(kinds[dependency] ?? [])
            }
            kinds[name] = upstream
        }
        return kinds
    }

    /// Steps in an order where every step follows its dependencies; ties keep file order (Kahn's algorithm
    /// always taking the earliest ready step), so the order is a pure function of the file.
    static func topologicalOrder(_ steps: [PipelineStep]) -> [PipelineStep] {
        topologicalOrder(steps.map { (name: $0.name, dependsOn: $0.dependsOn) }).indices.map { steps[$0] }
    }

    /// Kahn's algorithm over (name, depends_on) pairs with a min-heap of ready file positions: O((n + e) log n),
    /// where scanning for the earliest ready step each time would be quadratic on a long pipeline.
    /// Returns the entries in order, with their positions in `steps`.
    static func topologicalOrder(_ steps: [(name: String, dependsOn: [String])])
        -> (entries: [(name: String, dependsOn: [String])], indices: [Int]) {
        var position: [String: Int] = [:]
        for (index, step) in steps.enumerated() where position[step.name] == nil { position[step.name] = index }
        var waitingOn = [Int](repeating: 0, count: steps.count)
        var dependents = [[Int]](repeating: [], count: steps.count)
        for (index, step) in steps.enumerated() {
            for dependency in Set(step.dependsOn) {
                guard let parent = position[dependency] else { continue }
                waitingOn[index] += 1
                dependents[parent].append(index)
            }
        }
        var ready = MinHeap()
        for index in steps.indices where waitingOn[index] == 0 { ready.push(index) }
        var indices: [Int] = []
        indices.reserveCapacity(steps.count)
        while let index = ready.pop() {
            indices.append(index)
            for dependent in dependents[index] {
                waitingOn[dependent] -= 1
                if waitingOn[dependent] == 0 { ready.push(dependent) }
            }
        }
        precondition(indices.count == steps.count,
                     "topologicalOrder called on a graph with a cycle; Pipeline validation prevents this")
        return (indices.map { steps[$0] }, indices)
    }

    /// The smallest-first heap of file positions Kahn's algorithm takes the earliest ready step from.
    struct MinHeap {
        private var items: [Int] = []

        mutating func push(_ value: Int) {
            items.append(value)
            var child = items.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard items[child] < items[parent] else { break }
                items.swapAt(child, parent)
                child = parent
            }
        }

        mutating func pop() -> Int? {
            guard let first = items.first else { return nil }
            let last = items.removeLast()
            guard !items.isEmpty else { return first }
            items[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1, right = left + 1
                var smallest = parent
                if left < items.count, items[left] < items[smallest] { smallest = left }
                if right < items.count, items[right] < items[smallest] { smallest = right }
                guard smallest != parent else { return first }
                items.swapAt(parent, smallest)
                parent = smallest
            }
        }
    }
}
