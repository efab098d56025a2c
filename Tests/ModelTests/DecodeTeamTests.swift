import AdaptCore
@testable import Model
import Testing

struct DecodeTeamTests {
    /// Hand-offs one right after the other, as a prompt pass makes them: whether a member takes part in a
    /// hand-off or is still letting go of the last one (the caller then runs it alone), no task may be lost or
    /// run twice.
    @Test(arguments: [2, 3])
    func everyTaskRunsExactlyOnceWhenHandOffsFollowOneAnotherClosely(members: Int) {
        for round in 0..<2_000 {
            let tasks = [2, 3, 7, 18, 36][round % 5]
            let runs = Locked([Int](repeating: 0, count: tasks))
            DecodeTeam.forEachTask(tasks, members: members) { task in runs.withLock { $0[task] += 1 } }
            let counts = runs.withLock { $0 }
            #expect(counts == [Int](repeating: 1, count: tasks), "round \(round)")
            if counts != [Int](repeating: 1, count: tasks) { return }
        }
    }
}
