import AdaptCore
@testable import Model
import Testing

struct DecodeTeamTests {
    /// Hand-offs one right after the other: a member still finishing the last one when the next comes makes the
    /// caller start alone and hand the rest over later, and no task may be lost or run twice on the way.
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
