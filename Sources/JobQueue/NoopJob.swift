import AdaptCore
import Foundation

/// The built-in `noop` kind, for engine tests and benchmarks: it waits `sleep_ms` (honouring cancellation)
/// and fails with probability `fail_rate`, drawn from `CounterRNG(seed: seed ?? job id)` with purpose
/// `.noopFailure` and the attempt as step, so a given job fails on the same attempts every time.
///
/// Input: `{"sleep_ms": Int?, "fail_rate": Double?, "seed": Int?, "enqueued_at_us": Int?}`. Output: `{"attempt",
/// "slept_ms"}`, plus `start_latency_us` (wall clock now minus `enqueued_at_us`, measured first thing) when the
/// input carries the enqueue time: that is how benchmarks measure enqueue→start latency below a millisecond.
public enum NoopJob {
    public static let kind = "noop"

    public static func input(sleepMilliseconds: Int = 0, failRate: Double = 0, seed: Int? = nil) -> JSONValue {
        var fields: [String: JSONValue] = [:]
        if sleepMilliseconds > 0 { fields["sleep_ms"] = .int(sleepMilliseconds) }
        if failRate > 0 { fields["fail_rate"] = .double(failRate) }
        if let seed { fields["seed"] = .int(seed) }
        return .object(fields)
    }

    /// The body a `Worker` runs for `noop` jobs.
    public static let body: JobBody = { claim, context in
        // A measurement, not a result: wall time is read only when a benchmark asked for it.
        let latency = claim.input["enqueued_at_us"]?.intValue.map { Int((Date().timeIntervalSince1970 * 1e6).rounded()) - $0 }
        let sleep = max(0, claim.input["sleep_ms"]?.intValue ?? 0)
        let failRate = claim.input["fail_rate"]?.doubleValue ?? 0
        let seed = UInt64(bitPattern: Int64(claim.input["seed"]?.intValue ?? Int(claim.jobID.value)))
        if sleep > 0 { try await Task.sleep(for: .milliseconds(sleep)) }
        if context.isRunCancelled { return .cancel(reason: "run cancelled") }
        let draw = CounterRNG(seed: seed).uniform(.noopFailure, step: UInt64(claim.attempt), index: 0)
        if draw < failRate {
            return .retry(error: "noop: simulated failure on attempt \(claim.attempt) (draw \(draw) < fail_rate \(failRate))")
        }
        var output: [String: JSONValue] = ["attempt": .int(claim.attempt), "slept_ms": .int(sleep)]
        if let latency { output["start_latency_us"] = .int(latency) }
        return .completed(.object(output))
    }
}
