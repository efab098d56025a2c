import AdaptCore
import JobQueue
import Storage
import Synchronization

/// Shares one transaction among the jobs of a worker that finish at about the same time.
///
/// A worker running several jobs at once would otherwise commit once per finished job, and each commit writes
/// the same few pages (the jobs' leaf page, the claim index, the event log) again. Here finished jobs wait for
/// each other: the commit happens when every slot that holds a job has finished it, or `lingerMilliseconds`
/// after a job first waited, whichever comes first, and takes all of them together, each with its next claim
/// (`JobQueue.complete(_:thenClaim:)`). A worker with one slot, or whose other slots are idle, commits at
/// once, so a lone job's latency does not change; under load batches form by themselves (the "group commit"
/// of database logs).
final class GroupCommit<Engine: JobEngine>: Sendable {
    typealias Outcome = Result<Claim?, any Error>

    /// The longest a finished job waits for its siblings.
    static var lingerMilliseconds: Int { 1 }

    private let queue: Engine
    private let request: ClaimRequest
    /// How many slots hold a job now (running it or recording it).
    private let busy = Atomic(0)
    private let commits = Atomic(0)
    private let state = Locked(State())

    private struct Waiting: Sendable {
        let completion: JobCompletion<Engine.Connection>
        let continuation: CheckedContinuation<Outcome, Never>
    }

    private struct State: Sendable {
        var waiting: [Waiting] = []
        var committing = false
        var lingering = false
    }

    private enum Next { case nothing, commit, linger }

    init(queue: Engine, request: ClaimRequest) {
        self.queue = queue
        self.request = request
    }

    /// A slot claimed a job on its own (not through a commit here).
    func slotTookJob() { busy.add(1, ordering: .relaxed) }

    /// A slot holds no job any more (its last completion brought no next claim, or the job ended otherwise).
    func slotIsFree() { busy.subtract(1, ordering: .relaxed) }

    /// How many slots hold a job now.
    var busySlots: Int { busy.load(ordering: .relaxed) }

    /// Transactions made so far.
    var count: Int { commits.load(ordering: .relaxed) }

    /// Records `completion` (and claims the slot's next job when it asks for one); returns that claim, or the
    /// error that kept the completion from being recorded.
    func submit(_ completion: JobCompletion<Engine.Connection>) async -> Outcome {
        // Alone, commit here without suspending the task: a suspension costs a trip through the scheduler.
        let alone = state.withLock { state -> Bool in
            guard !state.committing, state.waiting.isEmpty, busySlots <= 1 else { return false }
            state.committing = true
            return true
        }
        if alone {
            let outcome = commit([completion])[0]
            followUp()
            return outcome
        }
        return await withCheckedContinuation { continuation in
            let next = state.withLock { state -> Next in
                state.waiting.append(Waiting(completion: completion, continuation: continuation))
                return decide(&state)
            }
            run(next)
        }
    }

    /// What to do now that the waiting list changed. Call with the state locked.
    private func decide(_ state: inout State) -> Next {
        guard !state.committing, !state.waiting.isEmpty else { return .nothing }
        if state.waiting.count >= busySlots {
            state.committing = true
            return .commit
        }
        guard !state.lingering else { return .nothing }
        state.lingering = true
        return .linger
    }

    private func run(_ next: Next) {
        switch next {
        case .nothing:
            break
        case .commit:
            commitWaiting()
        case .linger:
            Task {
                try? await Task.sleep(for: .milliseconds(Self.lingerMilliseconds))
                let next = state.withLock { state -> Next in
                    state.lingering = false
                    guard !state.committing, !state.waiting.isEmpty else { return .nothing }
                    state.committing = true
                    return .commit
                }
                run(next)
            }
        }
    }

    /// Commits every waiting completion and resumes their slots.
    private func commitWaiting() {
        let batch = state.withLock { state -> [Waiting] in
            defer { state.waiting.removeAll(keepingCapacity: true) }
            return state.waiting
        }
        let outcomes = commit(batch.map(\.completion))
        followUp()
        for (waiting, outcome) in zip(batch, outcomes) { waiting.continuation.resume(returning: outcome) }
    }

    /// Ends a commit; completions that queued during it are committed by a new task (or linger), so the slot
    /// that committed gets on with its own next job.
    private func followUp() {
        let next = state.withLock { state -> Next in
            state.committing = false
            return decide(&state)
        }
        if case .commit = next {
            Task { commitWaiting() }
        } else {
            run(next)
        }
    }

    private func commit(_ completions: [JobCompletion<Engine.Connection>]) -> [Outcome] {
        commits.add(1, ordering: .relaxed)
        do {
            return try queue.complete(completions, thenClaim: request)
        } catch {
            return Array(repeating: .failure(error), count: completions.count)
        }
    }
}
