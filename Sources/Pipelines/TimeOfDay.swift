/// A wall-clock time of day, minute resolution: when a nightly timer fires.
public struct TimeOfDay: Sendable, Hashable, Codable, CustomStringConvertible {
    public let hour: Int
    public let minute: Int

    public init?(hour: Int, minute: Int) {
        guard (0...23).contains(hour), (0...59).contains(minute) else { return nil }
        self.hour = hour
        self.minute = minute
    }

    /// `H:MM` or `HH:MM`, 00:00 to 23:59; throws `PipelineError.invalidTimeOfDay` otherwise.
    public init(parsing text: String) throws {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...2).contains(parts[0].count), parts[1].count == 2,
              parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
              let h = Int(parts[0]), let m = Int(parts[1]), let time = TimeOfDay(hour: h, minute: m)
        else { throw PipelineError.invalidTimeOfDay(text) }
        self = time
    }

    /// `02:00`
    public var description: String {
        (hour < 10 ? "0" : "") + String(hour) + ":" + (minute < 10 ? "0" : "") + String(minute)
    }
}
