import Model

/// What a process that runs step bodies does before anything else; the worker executables call it, so they
/// name no BLAS call of their own and do not link the model module for one.
public enum StepProcess {
    /// Stops OpenBLAS's idle threads (`BLAS.stopIdleThreads`): they spin for about 0.1 s of a core after the
    /// library loads, and a worker spends most of its life waiting for a step, not multiplying.
    ///
    /// First, it pins OpenBLAS's kernels (`BLASCoreType`), re-executing the worker when the variable was
    /// unset (a worker `adapt work` starts inherits it, so only a worker started by hand does): a step resumed
    /// by a worker on another machine computes with the kernels an uninterrupted run used.
    public static func prepare() {
        BLASCoreType.pinByReexecuting()
        BLAS.stopIdleThreads()
    }

    /// Executes the worker again with OpenBLAS's core type pinned to `coreType` (nil: adapt's own choice), as a
    /// train step resuming a checkpoint of other kernels asks (`ResumeArithmetic`); returns errno if it failed.
    public static func reexecute(pinning coreType: String?) -> Int32 {
        BLASCoreType.reexecute(pinning: coreType)
    }
}
