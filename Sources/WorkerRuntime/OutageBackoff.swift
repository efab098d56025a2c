import AdaptCore
import Foundation

/// How a worker waits out a database it cannot reach (a PostgreSQL server restarting, a network cut): every
/// slot that meets the outage sleeps a capped, jittered, growing delay and reconnects; the worker says so once
/// when the outage starts and once when the database answers again, not on every attempt.
///
/// Jitter spreads the reconnects of many workers over the delay, so a server coming back is not met by all of
/// them in the same millisecond.
final class OutageBackoff: Sendable {
    static let firstMilliseconds = 100
    static let capMilliseconds = 5_000

    private let log: (@Sendable (String) -> Void)?
    private let state = Locked<Outage?>(nil)

    private struct Outage {
        let started: DispatchTime
        var attempts: Int
    }

    init(log: (@Sendable (String) -> Void)?) {
        self.log = log
    }

    /// The delay before attempt `attempt` (from 1): doubling from `firstMilliseconds`, capped, then drawn
    /// uniformly from its upper half.
    static func delayMilliseconds(attempt: Int, draw: Double = Double.random(in: 0..<1)) -> Int {
        let ceiling = min(capMilliseconds, firstMilliseconds << min(max(attempt - 1, 0), 16))
        return ceiling / 2 + Int(Double(ceiling - ceiling / 2) * draw)
    }

    /// Says the database is unreachable (once per outage), sleeps the next delay, and calls `reconnect`, whose
    /// failure just means another round.
    func waitOut(_ error: any Error, reconnect: () throws -> Void) async {
        try? await Task.sleep(for: .milliseconds(nextDelayMilliseconds(after: error)))
        try? reconnect()
    }

    /// Counts an attempt that met the outage `error` (saying so when it starts one) and returns how long to wait
    /// before the next: for a caller that cannot sleep in a task, such as the heartbeat thread.
    func nextDelayMilliseconds(after error: any Error) -> Int {
        let (first, attempt) = state.withLock { outage -> (Bool, Int) in
            if outage == nil {
                outage = Outage(started: .now(), attempts: 1)
                return (true, 1)
            }
            outage!.attempts += 1
            return (false, outage!.attempts)
        }
        if first {
            log?("database unreachable (\(error)); retrying with backoff (at most every \(Self.capMilliseconds / 1000) s) until it answers")
        }
        return Self.delayMilliseconds(attempt: attempt)
    }

    /// The database answered: ends the outage, if there was one, and says how long it lasted.
    func answered() {
        guard let ended = state.withLock({ outage -> Outage? in
            defer { outage = nil }
            return outage
        }) else { return }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - ended.started.uptimeNanoseconds) / 1e9
        log?("database reachable again after \(String(format: "%.1f", seconds)) s (\(ended.attempts) attempt(s))")
    }
}
