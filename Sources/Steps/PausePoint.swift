import Foundation
import AdaptCore

/// Named points in the step code where a test can hold a worker process: with `ADAPT_TEST_PAUSE_AT=<name>`
/// in its environment, the process stops itself (SIGSTOP) the first time it reaches that point and goes on
/// from there when sent SIGCONT. The stale-worker tests use it to keep a worker between a step's work and its
/// completion until its lease has passed, without racing a timer. Unset, as everywhere but in those tests, a
/// point does nothing.
///
/// Points: `<kind>.before-finalize` (prune, sample, train, eval, promote: the body has finished, nothing of
/// its completion is written yet), `train.before-checkpoint-pointer` (a checkpoint blob is written, the
/// job's pointer to it is not) and `promote.before-export` (the promotion is committed, the active export not
/// yet rewritten).
enum PausePoint {
    static let variable = "ADAPT_TEST_PAUSE_AT"

    private static let requested = ProcessInfo.processInfo.environment[variable].flatMap { $0.isEmpty ? nil : $0 }
    private static let reached = Locked(false)

    static func reach(_ name: String) {
        guard name == requested, !reached.withLock({ value in defer { value = true }; return value }) else { return }
        raise(SIGSTOP)
    }
}
