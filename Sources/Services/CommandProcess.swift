import Steps

/// What `adapt` does before anything else, as the worker executables do (`StepProcess.prepare`): pins
/// OpenBLAS's kernels for bit-identical runs across x86-64 machines (may re-execute) and stops its idle threads.
public enum CommandProcess {
    public static func prepare() {
        StepProcess.prepare()
    }
}
