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
            for (position, dependency) in (node.dependsOn ?? []).enumerated() {
                let path = "\(node.path).depends_on[\(position)]"
                if dependency == node.name {
                    reader.report(path, "\(path) names the step itself; a step cannot depend on itself")
                    structurallySound = false
                } else if firstIndex[dependency] == nil {
                    var message = "\(path) names \"\(SafeName.abbreviated(dependency))\", which is not a step of this pipeline"
                    if let near = NearestName.suggestion(for: dependency, among: names) { message += "; did you mean \"\(near)\"?" }
                    else { message += " (steps: \(names.joined(separator: ", ")))" }
                    reader.report(path, message)
                    structurallySound = false
                } else if (node.dependsOn ?? []).prefix(position).contains(dependency) {
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
        for node in nodes {
            guard let kind = node.kind, let (needed, why) = requiredUpstream[kind] else { continue }
            let upstream = ancestors(of: node, byName: byName)
            if !upstream.contains(where: { $0.kind == needed }) {
                reader.report("\(node.path).depends_on", "\(node.label) is a \(kind.rawValue) step and must depend, directly "
                              + "or through other steps, on \(needed == .eval ? "an" : "a") \(needed.rawValue) step: \(why)")
            }
        }
    }

    /// The first cycle met in a depth-first walk from each step in file order, as names from a step back to itself.
    static func findCycle(_ nodes: [Node], byName: [String: Node]) -> [String]? {
        enum Mark { case visiting, done }
        var marks: [String: Mark] = [:]
        var stack: [String] = []
        func visit(_ name: String) -> [String]? {
            if marks[name] == .done { return nil }
            if marks[name] == .visiting {
                let start = stack.firstIndex(of: name) ?? 0
                return Array(stack[start...]) + [name]
            }
            marks[name] = .visiting
            stack.append(name)
            for dependency in byName[name]?.dependsOn ?? [] {
                if let cycle = visit(dependency) { return cycle }
            }
            stack.removeLast()
            marks[name] = .done
            return nil
        }
        for node in nodes {
            if let name = node.name, let cycle = visit(name) {
                // The walk follows depends_on (downstream → upstream); print the cycle in execution order.
                return cycle.reversed()
            }
        }
        return nil
    }

    static func ancestors(of node: Node, byName: [String: Node]) -> [Node] {
        var seen: Set<String> = []
        var result: [Node] = []
        var pending = node.dependsOn ?? []
        while let name = pending.popLast() {
            guard seen.insert(name).inserted, let upstream = byName[name] else { continue }
            result.append(upstream)
            pending.append(contentsOf: upstream.dependsOn ?? [])
        }
        return result
    }

    /// Steps in an order where every step follows its dependencies; ties keep file order (Kahn's algorithm
    /// always taking the earliest ready step), so the order is a pure function of the file.
    static func topologicalOrder(_ steps: [PipelineStep]) -> [PipelineStep] {
        var placed: Set<String> = []
        var remaining = steps
        var ordered: [PipelineStep] = []
        while !remaining.isEmpty {
            guard let next = remaining.firstIndex(where: { $0.dependsOn.allSatisfy(placed.contains) }) else {
                preconditionFailure("topologicalOrder called on a graph with a cycle; Pipeline validation prevents this")
            }
            let step = remaining.remove(at: next)
            placed.insert(step.name)
            ordered.append(step)
        }
        return ordered
    }
}
