import Model

/// What a train step does about the arithmetic its checkpoint was computed with (issue 24): machines differ
/// from one night to the next (one AVX2 only, one AVX-512, one whose user chose other kernels), and a resumed run ends
/// bit-identical to an uninterrupted one only under the same arithmetic.
///
/// The thread count is the job's (`blas_threads`), so it always matches. The core type is OpenBLAS's choice at
/// load time, so a worker that computes with other kernels than the checkpoint's executes itself again pinned
/// to the checkpoint's (`BLASCoreType.reexecute`) when this CPU runs them and they are safe under any core type
/// its user set (`BLASCoreType.isSafe`);
/// and a worker pinned that way executes itself again with adapt's own choice before it starts a step afresh
/// or resumes a checkpoint of other kernels. Where the arithmetic still differs (another OpenBLAS build,
/// another architecture, kernels this CPU lacks), the step runs and its events say the result will differ.
enum ResumeArithmetic {
    enum Decision: Equatable {
        /// Compute here as this process is.
        case proceed
        /// Execute the worker again with this core type (nil: adapt's own choice), then claim the step again.
        case reexecute(coreType: String?)
        /// Compute here, though the checkpoint's arithmetic cannot be matched: `why` says what stands in the way.
        case differs(reason: String, why: String)
    }

    /// `checkpoint`: the arithmetic of the checkpoint the step resumes (nil when it starts afresh or the
    /// checkpoint recorded none); `canReexecute`: whether this process can execute itself again (a worker).
    static func decide(checkpoint: BLASArithmetic?, resuming: Bool, here: BLASArithmetic, canReexecute: Bool,
                       environment: [String: String], cpuFlags: () -> Set<String>,
                       repinRefusal: (_ target: String) -> String?) -> Decision {
        guard let checkpoint, let reason = checkpoint.difference(from: here) else {
            // A fresh start (or a checkpoint of this arithmetic) in a worker pinned for an earlier resume: back to
            // the kernels every fresh run computes with, unless it is a resume this pin already matches.
            if canReexecute, BLASCoreType.isPinnedForResume(environment: environment), !(resuming && checkpoint != nil) {
                return .reexecute(coreType: nil)
            }
            return .proceed
        }
        let fields = checkpoint.differingFields(from: here)
        guard fields == ["core_type"] else {
            return .differs(reason: reason, why: "only OpenBLAS's core type can be pinned, not \(fields.filter { $0 != "core_type" }.joined(separator: ", "))")
        }
        guard canReexecute else { return .differs(reason: reason, why: "this process cannot execute itself again") }
        if let refusal = repinRefusal(checkpoint.coreType) { return .differs(reason: reason, why: refusal) }
        guard BLASCoreType.canRun(checkpoint.coreType, cpuFlags: cpuFlags()) else {
            return .differs(reason: reason, why: "this CPU cannot run \(checkpoint.coreType)'s kernels")
        }
        return .reexecute(coreType: checkpoint.coreType)
    }
}
