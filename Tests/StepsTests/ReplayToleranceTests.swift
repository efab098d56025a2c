import AdaptCore
import Model
import Testing
@testable import Steps

/// `--tolerance`'s comparison (issue 24): floating-point results within the bound, counts and the gate's outcome
/// exactly, the trained adapter by correspondence; and what a resumed train step does about its checkpoint's
/// arithmetic.
@Suite struct ReplayToleranceTests {
    let adapterA = String(repeating: "a", count: 64)
    let adapterB = String(repeating: "b", count: 64)
    let snapshot = String(repeating: "c", count: 64)

    func train(adapter: String, losses: [Double], steps: Int = 2) -> JSONValue {
        .object([
            "adapter_digest": .string(adapter), "adapter_blob": .string(adapter), "steps": .int(steps),
            "losses": .array(losses.map(JSONValue.double)), "stopped_early": .bool(false),
            "inputs": .object(["train_snapshot": .string(snapshot)]),
            "digests": .object(["input": .string(adapter), "output": .string(adapter)]),
        ])
    }

    func eval(candidate: String, scores: [Double], outcome: String) -> JSONValue {
        .object([
            "outcome": .string(outcome), "candidate_scores": .array(scores.map(JSONValue.double)),
            "inputs": .object(["candidate_adapter": .string(candidate), "held_out_snapshot": .string(snapshot)]),
        ])
    }

    @Test func theDistanceIsRelativeFromOneAndAbsoluteBelow() {
        #expect(ReplayComparison.distance(expected: 4, actual: 4.5) == 0.125)
        #expect(abs(ReplayComparison.distance(expected: 0.5, actual: 0.501) - 0.001) < 1e-15)
        #expect(ReplayComparison.distance(expected: 0, actual: 0) == 0)
        #expect(ReplayComparison.distance(expected: .nan, actual: 1) == .infinity)
        #expect(ReplayComparison.distance(expected: .nan, actual: .nan) == 0)
    }

    @Test func lossesWithinTheToleranceAgreeAndTheTrainedAdapterStandsForTheRecordedOne() {
        var comparison = TolerantComparison(tolerance: 1e-3)
        #expect(comparison.firstDifference(step: "train", kind: "train", expected: train(adapter: adapterA, losses: [2.5, 1.25]),
                                           actual: train(adapter: adapterB, losses: [2.5001, 1.25])) == nil)
        let largest = comparison.largest
        #expect(largest?.field == "losses[0]")
        #expect(largest?.step == "train")
        #expect(abs((largest?.difference ?? 0) - 0.0001 / 2.5) < 1e-12)
        // Eval's candidate is the adapter trained here, in place of the recorded one.
        #expect(comparison.firstDifference(step: "eval", kind: "eval", expected: eval(candidate: adapterA, scores: [0.7], outcome: "better"),
                                           actual: eval(candidate: adapterB, scores: [0.7002], outcome: "better")) == nil)
        // Any other adapter is a difference.
        let other = String(repeating: "d", count: 64)
        let d = comparison.firstDifference(step: "eval", kind: "eval", expected: eval(candidate: adapterA, scores: [0.7], outcome: "better"),
                                           actual: eval(candidate: other, scores: [0.7], outcome: "better"))
        #expect(d?.field == "inputs.candidate_adapter")
    }

    @Test func aValueOutsideTheToleranceACountOrTheGatesOutcomeIsTheFirstDifference() {
        var comparison = TolerantComparison(tolerance: 1e-6)
        let d = comparison.firstDifference(step: "train", kind: "train", expected: train(adapter: adapterA, losses: [2.5, 1.25]),
                                           actual: train(adapter: adapterB, losses: [2.5, 1.2501]))
        #expect(d == RunReplay.Difference(step: "train", field: "losses[1]", expected: .double(1.25), actual: .double(1.2501)))

        var loose = TolerantComparison(tolerance: 0.5)
        let steps = loose.firstDifference(step: "train", kind: "train", expected: train(adapter: adapterA, losses: [2.5], steps: 4),
                                          actual: train(adapter: adapterB, losses: [2.5], steps: 5))
        #expect(steps?.field == "steps", "a count is compared exactly, whatever the tolerance")
        _ = loose.firstDifference(step: "train", kind: "train", expected: train(adapter: adapterA, losses: [2.5]),
                                  actual: train(adapter: adapterB, losses: [2.5]))
        let outcome = loose.firstDifference(step: "eval", kind: "eval", expected: eval(candidate: adapterA, scores: [0.7], outcome: "better"),
                                            actual: eval(candidate: adapterB, scores: [0.7], outcome: "worse"))
        #expect(outcome?.field == "outcome")
        #expect(outcome?.expected == .string("better"))
    }

    @Test func aSnapshotDigestIsComparedExactlyEvenInTheTrainStep() {
        var comparison = TolerantComparison(tolerance: 1)
        var moved = train(adapter: adapterB, losses: [2.5]).objectValue ?? [:]
        moved["inputs"] = .object(["train_snapshot": .string(String(repeating: "e", count: 64))])
        let d = comparison.firstDifference(step: "train", kind: "train", expected: train(adapter: adapterA, losses: [2.5]), actual: .object(moved))
        #expect(d?.field == "inputs.train_snapshot")
    }
}

@Suite struct ResumeArithmeticTests {
    func arithmetic(_ core: String, openblas: String = "OpenBLAS 0.3.21", threads: Int = 1) -> BLASArithmetic {
        BLASArithmetic(openblas: openblas, coreType: core, threads: threads, kernels: "swift-simd-x86_64", pinned: true)
    }
    let avx2: Set<String> = ["avx", "avx2", "fma", "sse4_2", "ssse3", "pni"]
    let policy = ["OPENBLAS_CORETYPE": "Haswell", "ADAPT_BLAS_CORETYPE_ORIGIN": "policy"]

    func decide(_ checkpoint: BLASArithmetic?, resuming: Bool = true, here: BLASArithmetic, environment: [String: String],
                canReexecute: Bool = true, refusal: String? = nil) -> ResumeArithmetic.Decision {
        ResumeArithmetic.decide(checkpoint: checkpoint, resuming: resuming, here: here, canReexecute: canReexecute,
                                environment: environment, cpuFlags: { avx2 }, repinRefusal: { _ in refusal })
    }

    @Test func aCheckpointOfOtherKernelsThisCPURunsIsResumedPinnedToThem() {
        #if arch(x86_64)
        #expect(decide(arithmetic("Sandybridge"), here: arithmetic("Haswell"), environment: policy) == .reexecute(coreType: "Sandybridge"))
        #endif
        #expect(decide(arithmetic("Haswell"), here: arithmetic("Haswell"), environment: policy) == .proceed)
    }

    @Test func whatCannotBePinnedIsSaid() {
        guard case let .differs(_, why) = decide(arithmetic("SkylakeX"), here: arithmetic("Haswell"), environment: policy) else {
            Issue.record("an AVX-512 checkpoint on an AVX2 CPU cannot be pinned"); return
        }
        #if arch(x86_64)
        #expect(why.contains("cannot run SkylakeX"))
        #endif
        guard case let .differs(reason, other) = decide(arithmetic("Haswell", openblas: "OpenBLAS 0.3.26"), here: arithmetic("Haswell"),
                                                        environment: policy) else {
            Issue.record("another OpenBLAS build cannot be pinned"); return
        }
        #expect(reason.contains("OpenBLAS 0.3.26 recorded"))
        #expect(other.contains("openblas"))
        guard case let .differs(_, user) = decide(arithmetic("Sandybridge"), here: arithmetic("Haswell"),
                                                  environment: ["OPENBLAS_CORETYPE": "Haswell"],
                                                  refusal: "this worker's OPENBLAS_CORETYPE=Haswell was set by its user") else {
            Issue.record("a user's core type stands"); return
        }
        #expect(user.contains("set by its user"))
        #expect(decide(arithmetic("Sandybridge"), here: arithmetic("Haswell"), environment: policy, canReexecute: false)
                == .differs(reason: "OpenBLAS core type Haswell here, Sandybridge recorded", why: "this process cannot execute itself again"))
    }

    @Test func aWorkerPinnedForAResumeReturnsToAdaptsChoiceBeforeAFreshStart() {
        let resumed = ["OPENBLAS_CORETYPE": "Sandybridge", "ADAPT_BLAS_CORETYPE_ORIGIN": "resume"]
        #expect(decide(nil, resuming: false, here: arithmetic("Sandybridge"), environment: resumed) == .reexecute(coreType: nil))
        #expect(decide(arithmetic("Sandybridge"), here: arithmetic("Sandybridge"), environment: resumed) == .proceed)
        #expect(decide(nil, resuming: false, here: arithmetic("Haswell"), environment: policy) == .proceed)
    }

    @Test func aUsersCoreTypeIsReplacedOnlyByOlderIntelKernelsAndOneOpenBLASIgnoredIsNotRetried() {
        let user = ["OPENBLAS_CORETYPE": "Haswell"]
        #expect(BLASCoreType.repinRefusal(to: "Sandybridge", environment: user, running: "Haswell") == nil)
        #expect(BLASCoreType.repinRefusal(to: "Zen", environment: user, running: "Haswell")?.contains("set by its user") == true)
        #expect(BLASCoreType.repinRefusal(to: "SkylakeX", environment: user, running: "Haswell")?.contains("OPENBLAS_CORETYPE=SkylakeX") == true)
        #expect(BLASCoreType.repinRefusal(to: "Haswell", environment: ["OPENBLAS_CORETYPE": "Zen"], running: "Zen")?.contains("set by its user") == true)
        #expect(BLASCoreType.repinRefusal(to: "Sandybridge", environment: ["OPENBLAS_CORETYPE": "Zen"], running: "Zen") == nil)
        // Pinned for a resume over a user's Sandybridge: their value still bounds what may be pinned next.
        let pinnedOverUser = ["OPENBLAS_CORETYPE": "Nehalem", "ADAPT_BLAS_CORETYPE_ORIGIN": "resume", "ADAPT_BLAS_CORETYPE_USER": "Sandybridge"]
        #expect(BLASCoreType.userCoreType(environment: pinnedOverUser) == "Sandybridge")
        #expect(BLASCoreType.repinRefusal(to: "Haswell", environment: pinnedOverUser, running: "Nehalem")?.contains("Sandybridge was set by its user") == true)
        #expect(BLASCoreType.repinRefusal(to: "Bogus", environment: ["OPENBLAS_CORETYPE": "Bogus", "ADAPT_BLAS_CORETYPE_ORIGIN": "resume"],
                                          running: "Haswell")?.contains("OpenBLAS runs Haswell") == true)
        #expect(BLASCoreType.repinRefusal(to: "Zen", environment: [:], running: "Zen") == nil)
        #expect(BLASCoreType.repinRefusal(to: "Sandybridge", environment: ["OPENBLAS_CORETYPE": "haswell", "ADAPT_BLAS_CORETYPE_ORIGIN": "policy"],
                                          running: "Haswell") == nil)
    }
}
