import Foundation

/// The source of "now" in milliseconds since the Unix epoch; injected so tests can drive time directly.
public protocol Clock: Sendable {
    func nowMilliseconds() -> Int64
}

public struct SystemClock: Clock {
    public init() {}
    public func nowMilliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
}

/// The system clock shifted by a fixed amount: what a step sees when `ADAPT_CLOCK_OFFSET_MS` is set, so a
/// test can run the prune step a month later (TTL expiry) with real processes and a real job engine, whose
/// leases keep using the unshifted clock.
public struct OffsetClock: Clock {
    public let offsetMilliseconds: Int64

    public init(offsetMilliseconds: Int64) { self.offsetMilliseconds = offsetMilliseconds }
    public func nowMilliseconds() -> Int64 { SystemClock().nowMilliseconds() &+ offsetMilliseconds }

    /// The environment variable holding the offset, in milliseconds (may be negative).
    public static let variable = "ADAPT_CLOCK_OFFSET_MS"
    /// Holds a fixed time (milliseconds since the epoch) every step reads: scripts/record-bundle records the
    /// example bundles at one instant, so re-recording moves no digest unless a number moved.
    public static let frozenVariable = "ADAPT_CLOCK_FROZEN_MS"

    /// The step clock of a process: stopped at `ADAPT_CLOCK_FROZEN_MS`, shifted by `ADAPT_CLOCK_OFFSET_MS`, or
    /// the system clock.
    public static func stepClock(environment: [String: String] = ProcessInfo.processInfo.environment) -> any Clock {
        if let text = environment[frozenVariable], let at = Int64(text) { return ManualClock(at) }
        guard let text = environment[variable], let offset = Int64(text), offset != 0 else { return SystemClock() }
        return OffsetClock(offsetMilliseconds: offset)
    }
}

/// A clock that moves only when told to.
public final class ManualClock: Clock {
    private let now: Locked<Int64>

    public init(_ start: Int64 = 1_767_225_600_000) { now = Locked(start) }  // 2026-01-01T00:00:00Z
    public func nowMilliseconds() -> Int64 { now.withLock { $0 } }
    public func advance(milliseconds: Int64) { now.withLock { $0 += milliseconds } }
    public func set(_ milliseconds: Int64) { now.withLock { $0 = milliseconds } }
}

/// ISO-8601 in UTC with milliseconds (`2026-01-01T00:00:00.123Z`), the one way times are printed.
public enum Timestamp {
    /// Integer arithmetic throughout: going through `Date`'s floating-point seconds loses a millisecond on
    /// some values (…600123 ms printed as .122). Days to a civil date: H. Hinnant, "chrono-compatible
    /// low-level date algorithms" (days_from_civil's inverse).
    public static func iso8601(_ milliseconds: Int64) -> String {
        let (days, msOfDay) = floorDivide(milliseconds, 86_400_000)
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(msOfDay / 3_600_000, 2)):"
            + "\(pad(msOfDay / 60_000 % 60, 2)):\(pad(msOfDay / 1000 % 60, 2)).\(pad(msOfDay % 1000, 3))Z"
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        let q = a / b, r = a % b
        return r < 0 ? (q - 1, r + b) : (q, r)
    }
}
