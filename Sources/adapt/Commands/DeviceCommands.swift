import AdaptCore
import CommandLineKit
import Foundation
import Services

/// `adapt device`: what the train step's device policy sees now, and what it would decide.
enum DeviceCommands {
    static let all: [Command] = [device]

    static let pipeline = Option<String?>("pipeline", value: "FILE", help: "take the thresholds from this pipeline file")
    static let root = Option("root", value: "DIR", default: "/", help: "read sys/ and proc/ under DIR instead of / (for testing)")

    static let device = Command(
        "device", summary: "show power, temperature and memory readings and the device policy's decision",
        discussion: "Reads /sys/class/power_supply, /sys/class/thermal and /proc/meminfo. The thresholds come from the "
            + "pipeline's device section (the built-in nightly pipeline unless --pipeline is given).",
        options: [pipeline, root, .json]
    ) { invocation in
        let policy = try PipelineCommands.load(try invocation.arguments[pipeline]).device
        let root = URL(fileURLWithPath: try invocation.arguments[root])
        let (readings, decision) = DeviceCheck.check(policy, root: root)
        if invocation.arguments[.json] {
            Console.print(JSON.pretty(Report(readings: readings, policy: policy, decision: decision)))
            return
        }
        var table = Table("reading", "value")
        let supplies = readings.powerSupplies.map { supply in
            var parts = ["\(supply.name) (\(supply.type))"]
            if let online = supply.online { parts.append(online ? "online" : "offline") }
            if let capacity = supply.capacity { parts.append("\(capacity)%") }
            if let status = supply.status { parts.append(status.lowercased()) }
            if supply.scope == "Device" { parts.append("peripheral, ignored") }
            return parts.joined(separator: " ")
        }
        table.append(["power", supplies.isEmpty ? "no power supplies reported (no battery)" : supplies.joined(separator: "; ")])
        let zones = readings.thermalZones.map { "\($0.name)\($0.type.map { " (\($0))" } ?? "") \(String(format: "%.1f", $0.celsius)) °C" }
        table.append(["thermal", zones.isEmpty ? "no thermal zones reported" : zones.joined(separator: "; ")])
        table.append(["memory", readings.availableMemoryBytes.map { "\($0 / (1 << 20)) MiB available" } ?? "MemAvailable not reported"])
        table.append(["policy", "battery ≥ \(policy.minBatteryPercent)% unless on mains; every zone ≤ "
                      + "\(policy.maxTemperatureCelsius) °C; memory ≥ \(policy.minAvailableMemoryMB) MiB"])
        switch decision {
        case .proceed:
            table.append(["decision", "proceed"])
        case let .defer(reason, _):
            table.append(["decision", "defer: \(reason) (ask again in \(policy.retryAfterMinutes) min)"])
        }
        Console.print(table.render())
    }

    struct Report: Encodable {
        let readings: DeviceReadings
        let policy: DevicePolicy
        let decision: DeviceDecision

        enum Keys: String, CodingKey {
            case powerSupplies = "power_supplies", thermalZones = "thermal_zones"
            case availableMemoryBytes = "available_memory_bytes", onExternalPower = "on_external_power"
            case batteryPercent = "battery_percent", policy, decision, reason
            case retryAfterSeconds = "retry_after_seconds"
        }

        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(readings.powerSupplies, forKey: .powerSupplies)
            try c.encode(readings.thermalZones, forKey: .thermalZones)
            try encodeOptional(readings.availableMemoryBytes, .availableMemoryBytes, &c)
            try encodeOptional(readings.onExternalPower, .onExternalPower, &c)
            try encodeOptional(readings.batteryPercent, .batteryPercent, &c)
            try c.encode(policy, forKey: .policy)
            switch decision {
            case .proceed:
                try c.encode("proceed", forKey: .decision)
                try c.encodeNil(forKey: .reason)
                try c.encodeNil(forKey: .retryAfterSeconds)
            case let .defer(reason, _):
                try c.encode("defer", forKey: .decision)
                try c.encode(reason, forKey: .reason)
                try c.encode(decision.retryAfterMilliseconds / 1000, forKey: .retryAfterSeconds)
            }
        }

        private func encodeOptional<T: Encodable>(_ value: T?, _ key: Keys, _ c: inout KeyedEncodingContainer<Keys>) throws {
            if let value { try c.encode(value, forKey: key) } else { try c.encodeNil(forKey: key) }
        }
    }
}
