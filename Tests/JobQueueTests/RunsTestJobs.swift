import JobQueue
import Testing

/// The short forms both fixtures' tests enqueue, claim and read jobs with, whichever engine is underneath.
protocol RunsTestJobs {
    var engine: any JobEngine { get }
}

extension RunsTestJobs {
    /// A run of independent steps named a, b, c, … of kind `kind`.
    @discardableResult
    func enqueue(_ names: [String], kind: String = "test", dependsOn: [String: [String]] = [:],
                 maxAttempts: Int = 3, uniqueKey: String? = nil) throws -> EnqueueResult {
        let steps = names.map {
            RunDescription.Step(name: $0, kind: kind, input: .object(["name": .string($0)]),
                                dependsOn: dependsOn[$0] ?? [], maxAttempts: maxAttempts)
        }
        return try engine.enqueue(RunDescription(kind: "test", uniqueKey: uniqueKey, steps: steps))
    }

    func claim(_ kinds: [String] = ["test"], owner: String = "w1", lease: Int64 = 1_000) throws -> Claim? {
        try engine.claim(kinds: kinds, owner: owner, leaseMilliseconds: lease)
    }

    func state(_ id: JobID) throws -> JobState { try engine.job(id).state }

    /// Claims and completes everything claimable, returning the names in the order they started.
    func drain() throws -> [String] {
        var order: [String] = []
        while let claim = try claim() {
            for parent in try engine.parents(of: claim.jobID) {
                #expect(try state(parent) == .succeeded, "\(claim.name) started before its parent \(parent)")
            }
            order.append(claim.name)
            try engine.complete(claim, output: .object([:]))
        }
        return order
    }
}
