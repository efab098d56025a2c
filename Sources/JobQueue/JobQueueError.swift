/// Everything the job engine refuses. Descriptions name the value and the way out; they never quote a
/// job's input, output or error text.
public enum JobQueueError: Error, Equatable, CustomStringConvertible {
    case unknownRun(RunID)
    case unknownJob(JobID)
    case unknownIdentifier(String)
    /// A bare number names a run and a job at once.
    case ambiguousIdentifier(Int64)
    /// The worker's lease is gone (expired, rescued, or the job was re-claimed): the fencing token no longer
    /// matches, so nothing was written.
    case leaseLost(JobID, token: Int64)
    case notRetryable(JobID, state: JobState)
    case invalidRun(RunDescriptionProblem)
    case corruptRow(table: String, id: Int64, column: String)

    public var description: String {
        switch self {
        case let .unknownRun(id):
            return "\(id) does not exist; 'adapt runs' lists the runs"
        case let .unknownJob(id):
            return "\(id) does not exist; 'adapt jobs' lists the jobs"
        case let .unknownIdentifier(text):
            return "no run or job is named '\(text.prefix(40))'; 'adapt runs' and 'adapt jobs' list them"
        case let .ambiguousIdentifier(n):
            return "\(n) names both run-\(n) and job-\(n); write run-\(n) or job-\(n)"
        case let .leaseLost(id, token):
            return "the lease on \(id) (attempt \(token)) is no longer held by this worker: it expired or the "
                + "job was rescued; nothing was written, and the job will run again under a new attempt"
        case let .notRetryable(id, state):
            return "\(id) is \(state); only discarded, cancelled or failed jobs can be retried"
        case let .invalidRun(problem):
            return "invalid run description: \(problem)"
        case let .corruptRow(table, id, column):
            return "row \(id) of \(table) has an unreadable \(column); the database was edited by hand or is damaged"
        }
    }
}

/// What is wrong with a run description (`RunDescription.validate()`).
public enum RunDescriptionProblem: Equatable, Sendable, CustomStringConvertible {
    case noSteps
    case emptyKind
    case emptyStepName(index: Int)
    case emptyStepKind(step: String)
    case duplicateStep(String)
    case unknownDependency(step: String, dependency: String)
    case cycle([String])
    case invalidMaxAttempts(step: String, value: Int)
    case invalidLease(step: String, milliseconds: Int64)
    case invalidRunAt(step: String, milliseconds: Int64)
    case invalidTimeout(step: String, milliseconds: Int64)

    public var description: String {
        switch self {
        case .noSteps: return "it has no steps; give at least one in \"steps\""
        case .emptyKind: return "its \"kind\" is empty; name the kind of run (e.g. nightly)"
        case let .emptyStepName(index): return "step \(index) has an empty \"name\"; give every step a unique name"
        case let .emptyStepKind(step): return "step '\(step)' has an empty \"kind\"; name the worker kind that runs it"
        case let .duplicateStep(name): return "two steps are named '\(name)'; step names must be unique within a run"
        case let .unknownDependency(step, dependency):
            return "step '\(step)' depends on '\(dependency)', which is not a step of this run"
        case let .cycle(names):
            return "the dependencies form a cycle (\(names.joined(separator: " → "))); a run must be a DAG"
        case let .invalidMaxAttempts(step, value):
            return "step '\(step)' has max_attempts \(value); it must be at least 1"
        case let .invalidLease(step, milliseconds):
            return "step '\(step)' has lease_ms \(milliseconds); it must be from \(ClaimRequest.leaseRange.lowerBound) "
                + "to \(ClaimRequest.leaseRange.upperBound) (a day), or left out to take the worker's lease"
        case let .invalidRunAt(step, milliseconds):
            return "step '\(step)' has run_at \(milliseconds); it is milliseconds since the epoch, from 0 to "
                + "\(RunDescription.runAtRange.upperBound) (the end of year 9999), or left out to run as soon as possible"
        case let .invalidTimeout(step, milliseconds):
            return "step '\(step)' has timeout_ms \(milliseconds); it must be from \(JobTimeout.range.lowerBound) to "
                + "\(JobTimeout.range.upperBound) (a week), or left out for no timeout of its own"
        }
    }
}
