import AdaptCore
import JobQueue
import Storage
import Testing

@Suite struct EnqueueTests {
    @Test func jobsWithoutParentsAreReadyAndTheOthersPending() throws {
        let fixture = try QueueFixture()
        let run = try fixture.enqueue(["a", "b", "c"], dependsOn: ["b": ["a"], "c": ["a", "b"]])
        #expect(run.jobIDs.count == 3 && !run.existing)
        #expect(try run.jobIDs.map(fixture.state) == [.ready, .pending, .pending])
        #expect(try fixture.queue.parents(of: run.jobIDs[2]) == [run.jobIDs[0], run.jobIDs[1]])
        #expect(try fixture.queue.run(run.runID).state == "active")
    }

    @Test func secondEnqueueWithTheSameUniqueKeyReturnsTheFirstRunAndStoresNothing() throws {
        let fixture = try QueueFixture()
        let first = try fixture.enqueue(["a", "b"], uniqueKey: "mail/2026-01-01")
        let before = try fixture.snapshot()
        let second = try fixture.enqueue(["x", "y", "z"], uniqueKey: "mail/2026-01-01")
        #expect(second.existing)
        #expect(second.runID == first.runID && second.jobIDs == first.jobIDs)
        #expect(try fixture.snapshot() == before)
        let other = try fixture.enqueue(["a"], uniqueKey: "mail/2026-01-02")
        #expect(!other.existing && other.runID != first.runID)
    }

    @Test func theManifestIsKeptWithTheRun() throws {
        let fixture = try QueueFixture()
        let manifest = JSONValue.object(["lineage": .string("mail"), "seed": .int(7)])
        let run = try fixture.queue.enqueue(RunDescription(kind: "nightly", name: "mail night", manifest: manifest,
                                                           steps: [.init(name: "a", kind: "t")]))
        let record = try fixture.queue.run(run.runID)
        #expect(record.manifest == manifest && record.kind == "nightly" && record.name == "mail night")
    }

    static let malformed: [(RunDescription, RunDescriptionProblem)] = [
        (RunDescription(kind: "t", steps: []), .noSteps),
        (RunDescription(kind: "", steps: [.init(name: "a", kind: "t")]), .emptyKind),
        (RunDescription(kind: "t", steps: [.init(name: "", kind: "t")]), .emptyStepName(index: 0)),
        (RunDescription(kind: "t", steps: [.init(name: "a", kind: "")]), .emptyStepKind(step: "a")),
        (RunDescription(kind: "t", steps: [.init(name: "a", kind: "t"), .init(name: "a", kind: "t")]), .duplicateStep("a")),
        (RunDescription(kind: "t", steps: [.init(name: "a", kind: "t", dependsOn: ["b"])]),
         .unknownDependency(step: "a", dependency: "b")),
        (RunDescription(kind: "t", steps: [.init(name: "a", kind: "t", dependsOn: ["c"]), .init(name: "b", kind: "t", dependsOn: ["a"]),
                                           .init(name: "c", kind: "t", dependsOn: ["b"])]), .cycle(["a", "c", "b", "a"])),
        (RunDescription(kind: "t", steps: [.init(name: "a", kind: "t", dependsOn: ["a"])]), .cycle(["a", "a"])),
        (RunDescription(kind: "t", steps: [.init(name: "a", kind: "t", maxAttempts: 0)]), .invalidMaxAttempts(step: "a", value: 0)),
        (RunDescription(kind: "t", steps: [.init(name: "a", kind: "t", leaseMilliseconds: 29)]), .invalidLease(step: "a", milliseconds: 29)),
        (RunDescription(kind: "t", steps: [.init(name: "a", kind: "t", leaseMilliseconds: 86_400_001)]),
         .invalidLease(step: "a", milliseconds: 86_400_001)),
        (RunDescription(kind: "t", steps: [.init(name: "a", kind: "t", runAt: -1)]), .invalidRunAt(step: "a", milliseconds: -1)),
        (RunDescription(kind: "t", steps: [.init(name: "a", kind: "t", runAt: 10_000_000_000_000_000)]),
         .invalidRunAt(step: "a", milliseconds: 10_000_000_000_000_000)),
    ]

    @Test(arguments: 0..<malformed.count)
    func malformedRunDescriptionIsRefusedNamingTheProblemAndNothingIsStored(case index: Int) throws {
        let (description, problem) = Self.malformed[index]
        let fixture = try QueueFixture()
        try fixture.enqueue(["existing"])
        let before = try fixture.snapshot()
        #expect(throws: JobQueueError.invalidRun(problem)) { try fixture.queue.enqueue(description) }
        #expect(try fixture.snapshot() == before)
    }

    @Test func runDescriptionDecodesFromSnakeCaseJSONWithDefaults() throws {
        let text = """
            {"kind": "nightly", "unique_key": "k", "steps": [
              {"name": "prune", "kind": "prune"},
              {"name": "train", "kind": "train", "depends_on": ["prune"], "max_attempts": 5, "priority": -1,
               "run_at": 1767225600000, "lease_ms": 600000, "input": {"rank": 8}}]}
            """
        let description = try JSON.decode(RunDescription.self, from: text, context: "test")
        #expect(description.name == "nightly" && description.uniqueKey == "k" && description.manifest == .object([:]))
        #expect(description.steps[0].maxAttempts == RunDescription.defaultMaxAttempts && description.steps[0].dependsOn.isEmpty)
        #expect(description.steps[1].dependsOn == ["prune"] && description.steps[1].maxAttempts == 5)
        #expect(description.steps[1].priority == -1 && description.steps[1].runAt == 1_767_225_600_000)
        #expect(description.steps[1].input["rank"] == .int(8))
        #expect(description.steps[0].leaseMilliseconds == nil && description.steps[1].leaseMilliseconds == 600_000)
        #expect(try description.validate().map(\.name) == ["prune", "train"])
    }

    @Test func aMisspeltFieldIsRefusedInsteadOfDropped() throws {
        let text = #"{"kind": "t", "steps": [{"name": "a", "kind": "t"}, {"name": "b", "kind": "t", "depends-on": ["a"]}]}"#
        #expect {
            try JSON.decode(RunDescription.self, from: text, context: "run.json")
        } throws: { error in
            "\(error)".contains("unknown field \"depends-on\"") && "\(error)".contains("run.json")
        }
        #expect(throws: CoreError.self) {
            try JSON.decode(RunDescription.self, from: #"{"kind": "t", "step": [], "steps": []}"#, context: "run.json")
        }
    }

    /// A chain deeper than the call stack could hold when the check recursed.
    @Test func aHundredThousandStepChainIsOrderedAndItsCycleReportedWithoutRecursion() throws {
        let count = 100_000
        // Step i depends on step i + 1, so the parents come last in the given order.
        let chain = (0..<count).map { RunDescription.Step(name: "s\($0)", kind: "t", dependsOn: $0 + 1 < count ? ["s\($0 + 1)"] : []) }
        let ordered = try RunDescription(kind: "t", steps: chain).validate()
        #expect(ordered.first?.name == "s\(count - 1)" && ordered.last?.name == "s0" && ordered.count == count)

        var loop = chain
        loop[count - 1].dependsOn = ["s0"]
        #expect {
            try RunDescription(kind: "t", steps: loop).validate()
        } throws: { error in
            guard case let JobQueueError.invalidRun(.cycle(names)) = error else { return false }
            return names.count == count + 1 && names.first == "s0" && names.last == "s0"
        }
    }
}
