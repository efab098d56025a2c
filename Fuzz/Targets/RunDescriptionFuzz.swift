import AdaptCore
import Foundation
import JobQueue

/// Run descriptions (`adapt job submit`): decoded, then validated into a topological order of its steps.
public enum RunDescriptionFuzz: FuzzTarget {
    public static let name = "run-description"

    public static func run(_ data: Data) {
        guard let description = try? JSON.decode(RunDescription.self, from: data, context: "run.json"),
              let order = try? description.validate() else { return }
        guard order.count == description.steps.count else {
            FuzzFinding.fail(name, "validation ordered \(order.count) of \(description.steps.count) steps")
        }
        var seen: Set<String> = []
        for step in order {
            for dependency in step.dependsOn where !seen.contains(dependency) {
                FuzzFinding.fail(name, "a step comes before one it depends on")
            }
            seen.insert(step.name)
        }
    }

    public static func seeds() throws -> [Data] {
        [
            #"{"kind": "t", "steps": [{"name": "a", "kind": "t"}, {"name": "b", "kind": "t", "depends_on": ["a"]}]}"#,
            #"{"kind": "nightly", "name": "n", "unique_key": "k", "manifest": {"lineage": "l"}, "steps": [{"name": "s", "kind": "sample", "input": {"n": 1}, "priority": 3, "max_attempts": 2, "lease_ms": 30000, "run_at": 0}, {"name": "t", "kind": "train", "depends_on": ["s"]}, {"name": "e", "kind": "eval", "depends_on": ["t", "s"]}]}"#,
            #"{"kind": "t", "steps": [{"name": "a", "kind": "t", "depends_on": ["b"]}, {"name": "b", "kind": "t", "depends_on": ["a"]}]}"#,
        ].map { Data($0.utf8) }
    }
}
