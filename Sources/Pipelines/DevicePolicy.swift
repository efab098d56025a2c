import Foundation

/// When the machine may train: on mains or a full-enough battery, cool enough, with memory for the model.
///
/// The train step asks before it starts and again between checkpoints; a `.defer` moves the step to a later
/// run_at with an event saying why, it never fails it (issue 7).
public struct DevicePolicy: Sendable, Equatable, Codable {
    /// On battery, train only at or above this charge. 0 trains on any charge.
    public var minBatteryPercent: Int
    /// Defer while any thermal zone is above this temperature.
    public var maxTemperatureCelsius: Double
    /// Defer while the kernel's MemAvailable is below this many MiB (the model, its activations and LoRA state).
    public var minAvailableMemoryMB: Int
    /// How long a deferred step waits before it asks again.
    public var retryAfterMinutes: Int

    public init(minBatteryPercent: Int = 30, maxTemperatureCelsius: Double = 85, minAvailableMemoryMB: Int = 1024,
                retryAfterMinutes: Int = 30) {
        self.minBatteryPercent = minBatteryPercent
        self.maxTemperatureCelsius = maxTemperatureCelsius
        self.minAvailableMemoryMB = minAvailableMemoryMB
        self.retryAfterMinutes = retryAfterMinutes
    }

    enum CodingKeys: String, CodingKey {
        case minBatteryPercent = "min_battery_percent", maxTemperatureCelsius = "max_temperature_celsius"
        case minAvailableMemoryMB = "min_available_memory_mb", retryAfterMinutes = "retry_after_minutes"
    }

    /// Proceed, or defer with every reason that applies. Readings the machine does not have (no battery, no
    /// thermal zones, no MemAvailable line) never defer.
    public func decide(_ readings: DeviceReadings) -> DeviceDecision {
        var reasons: [String] = []
        if readings.onExternalPower == false, let percent = readings.batteryPercent, percent < minBatteryPercent {
            reasons.append("on battery at \(percent)%, below the \(minBatteryPercent)% the pipeline asks for")
        }
        if let hottest = readings.hottestZone, hottest.celsius > maxTemperatureCelsius {
            reasons.append("thermal zone \(hottest.name)\(hottest.type.map { " (\($0))" } ?? "") at "
                           + "\(Self.degrees(hottest.celsius)) °C, above the \(Self.degrees(maxTemperatureCelsius)) °C "
                           + "the pipeline allows")
        }
        if let available = readings.availableMemoryBytes {
            let mebibytes = available / (1 << 20)
            if mebibytes < Int64(minAvailableMemoryMB) {
                reasons.append("\(mebibytes) MiB of memory available, below the \(minAvailableMemoryMB) MiB the pipeline "
                               + "asks for")
            }
        }
        if reasons.isEmpty { return .proceed }
        return .defer(reason: reasons.joined(separator: "; "), retryAfter: .seconds(retryAfterMinutes * 60))
    }

    static func degrees(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
    }
}

/// What the device policy says about now.
public enum DeviceDecision: Sendable, Equatable {
    case proceed
    /// Not now: `reason` is a sentence for the event log, `retryAfter` when to ask again.
    case `defer`(reason: String, retryAfter: Duration)

    public var shouldProceed: Bool { if case .proceed = self { return true }; return false }

    /// Whole milliseconds until the next attempt (0 for `.proceed`), the unit the job engine's clock uses.
    public var retryAfterMilliseconds: Int64 {
        guard case let .defer(_, retryAfter) = self else { return 0 }
        let (seconds, attoseconds) = retryAfter.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
