import Model

/// What a process that runs step bodies does before anything else; the worker executables call it, so they
/// name no BLAS call of their own and do not link the model module for one.
public enum StepProcess {
    /// Stops OpenBLAS's idle threads (`BLAS.stopIdleThreads`): they spin for about 0.1 s of a core after the
    /// library loads, and a worker spends most of its life waiting for a step, not multiplying.
    public static func prepare() {
        BLAS.stopIdleThreads()
    }
}
