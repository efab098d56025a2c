import AdaptCore
import Foundation
import Model
import Pipelines

/// The OpenBLAS thread count a train or eval step computes with: its input's `blas_threads`.
///
/// A fixed count is the input's. `auto` is resolved when the step starts on the worker that claimed it, and the
/// step records the count in its output (`inputs.blas_threads`), because 1 and 2 threads differ in the last bits
/// (DESIGN.md, "Training and resume"). In order:
/// - replaying, the count the run recorded;
/// - resuming a train step, the count of the checkpoint it resumes from (its bits were computed with it), whatever
///   this machine has;
/// - otherwise every core this process may use (`available`).
public struct StepThreads: Sendable, Equatable {
    public let count: Int
    /// True when the input said `auto`: the step records `count`.
    public let resolved: Bool

    /// The count the step's output records: nil for a fixed count, which its input already says.
    public var recorded: Int? { resolved ? count : nil }

    /// The count `context`'s step runs at; `checkpointed` is the count of the checkpoint a train step resumes
    /// from (asked only for `auto` outside replay). Throws when a replayed `auto` step recorded no count.
    static func of(_ context: StepContext, checkpointed: () -> Int? = { nil }) throws -> StepThreads {
        guard let value = context.input["blas_threads"], let choice = BLASThreadCount(value), choice == .auto else {
            return StepThreads(count: context.input["blas_threads"]?.intValue ?? 1, resolved: false)
        }
        if let recorded = context.recorded {
            guard let count = recordedCount(recorded) else {
                throw StepError.malformedOutput(step: context.name, field: "inputs.blas_threads")
            }
            return StepThreads(count: count, resolved: true)
        }
        if let count = checkpointed() { return StepThreads(count: count, resolved: true) }
        return StepThreads(count: available(root: context.environment.deviceRoot), resolved: true)
    }

    /// Every core this process may use: its CPU affinity (`DeviceReadings.allowedCores` under `root`, the fake tree
    /// of tests included), else the processors online, no more than its control group's CPU limit
    /// (`DeviceReadings.cgroupCPULimit`), at most `BLAS.maximumThreads` and at least 1.
    public static func available(root: URL = URL(fileURLWithPath: "/")) -> Int {
        let affinity = DeviceReadings.allowedCores(root: root) ?? ProcessInfo.processInfo.activeProcessorCount
        let cores = min(affinity, DeviceReadings.cgroupCPULimit(root: root) ?? affinity)
        return max(1, min(cores, BLAS.maximumThreads))
    }

    /// The count a recorded step ran at: its input's fixed count, or the one its output recorded for `auto`; nil
    /// when neither says (an `auto` step without its output).
    public static func ranWith(input: JSONValue, output: JSONValue?) -> Int? {
        guard let value = input["blas_threads"] else { return 1 }
        if BLASThreadCount(value) == .auto { return output.flatMap(recordedCount) }
        return value.intValue
    }

    private static func recordedCount(_ output: JSONValue) -> Int? {
        output["inputs"]?["blas_threads"]?.intValue.flatMap { $0 >= 1 ? $0 : nil }
    }
}
