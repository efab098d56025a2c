import Foundation
import Synchronization

/// The source of "now" in milliseconds since the Unix epoch; injected so tests can drive time directly.
public protocol Clock: Sendable {
    func nowMilliseconds() -> Int64
}

public struct SystemClock: Clock {
    public init() {}
    public func nowMilliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
}

/// A clock that moves only when told to.
public final class ManualClock: Clock {
    private let now: Mutex<Int64>

    public init(_ start: Int64 = 1_767_225_600_000) { now = Mutex(start) }  // 2026-01-01T00:00:00Z
    public func nowMilliseconds() -> Int64 { now.withLock { $0 } }
    public func advance(milliseconds: Int64) { now.withLock { $0 += milliseconds } }
    public func set(_ milliseconds: Int64) { now.withLock { $0 = milliseconds } }
}

/// ISO-8601 in UTC with milliseconds, the one way times are printed.
public enum Timestamp {
    public static func iso8601(_ milliseconds: Int64) -> String {
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        return date.formatted(.iso8601.year().month().day().dateSeparator(.dash)
            .time(includingFractionalSeconds: true).timeSeparator(.colon).timeZone(separator: .omitted))
    }
}
