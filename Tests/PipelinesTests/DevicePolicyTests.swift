import Foundation
import Pipelines
import Testing
import TestSupport

/// A fake `/sys` and `/proc` tree under a temporary directory.
struct FakeSysfs {
    let directory = TemporaryDirectory("adapt-sysfs")
    var root: URL { directory.url }

    func write(_ path: String, _ text: String) throws {
        let url = root.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data((text + "\n").utf8).write(to: url)
    }

    func supply(_ name: String, type: String, online: Int? = nil, capacity: Int? = nil, status: String? = nil,
                scope: String? = nil) throws {
        let base = "sys/class/power_supply/\(name)/"
        try write(base + "type", type)
        if let online { try write(base + "online", String(online)) }
        if let capacity { try write(base + "capacity", String(capacity)) }
        if let status { try write(base + "status", status) }
        if let scope { try write(base + "scope", scope) }
    }

    func zone(_ index: Int, type: String, millidegrees: Int) throws {
        try write("sys/class/thermal/thermal_zone\(index)/type", type)
        try write("sys/class/thermal/thermal_zone\(index)/temp", String(millidegrees))
    }

    func memAvailable(kilobytes: Int) throws {
        try write("proc/meminfo", "MemTotal:       16318412 kB\nMemFree:         1234567 kB\nMemAvailable:   \(kilobytes) kB\nBuffers:          100 kB")
    }

    /// A laptop with everything in order: on mains, 80 % charged, cool, 8 GiB free.
    static func healthyLaptop() throws -> FakeSysfs {
        let fake = FakeSysfs()
        try fake.supply("AC", type: "Mains", online: 1)
        try fake.supply("BAT0", type: "Battery", capacity: 80, status: "Charging")
        try fake.zone(0, type: "acpitz", millidegrees: 45_000)
        try fake.zone(1, type: "x86_pkg_temp", millidegrees: 52_500)
        try fake.memAvailable(kilobytes: 8 * 1024 * 1024)
        return fake
    }
}

let policy = DevicePolicy()  // 30 %, 85 °C, 1024 MiB, 30 min

@Test func allClearProceeds() throws {
    let fake = try FakeSysfs.healthyLaptop()
    let readings = DeviceReadings.read(root: fake.root)
    #expect(readings.onExternalPower == true)
    #expect(readings.batteryPercent == 80)
    #expect(readings.hottestZone?.celsius == 52.5)
    #expect(readings.availableMemoryBytes == Int64(8) << 30)
    #expect(policy.decide(readings) == .proceed)
}

@Test func lowBatteryOffMainsDefersWithTheReason() throws {
    let fake = try FakeSysfs.healthyLaptop()
    try fake.supply("AC", type: "Mains", online: 0)
    try fake.supply("BAT0", type: "Battery", capacity: 18, status: "Discharging")
    let decision = policy.decide(DeviceReadings.read(root: fake.root))
    #expect(decision == .defer(reason: "on battery at 18%, below the 30% the pipeline asks for", retryAfter: .seconds(1800)))
    #expect(decision.retryAfterMilliseconds == 1_800_000)
}

@Test func lowBatteryOnMainsProceeds() throws {
    let fake = try FakeSysfs.healthyLaptop()
    try fake.supply("BAT0", type: "Battery", capacity: 5, status: "Charging")
    #expect(policy.decide(DeviceReadings.read(root: fake.root)) == .proceed)
}

@Test func batteryAboveThresholdOffMainsProceeds() throws {
    let fake = try FakeSysfs.healthyLaptop()
    try fake.supply("AC", type: "Mains", online: 0)
    try fake.supply("BAT0", type: "Battery", capacity: 64, status: "Discharging")
    #expect(policy.decide(DeviceReadings.read(root: fake.root)) == .proceed)
}

@Test func hotThermalZoneDefers() throws {
    let fake = try FakeSysfs.healthyLaptop()
    try fake.zone(1, type: "x86_pkg_temp", millidegrees: 92_000)
    #expect(policy.decide(DeviceReadings.read(root: fake.root))
            == .defer(reason: "thermal zone thermal_zone1 (x86_pkg_temp) at 92 °C, above the 85 °C the pipeline allows",
                      retryAfter: .seconds(1800)))
}

@Test func lowMemoryDefers() throws {
    let fake = try FakeSysfs.healthyLaptop()
    try fake.memAvailable(kilobytes: 600 * 1024)
    #expect(policy.decide(DeviceReadings.read(root: fake.root))
            == .defer(reason: "600 MiB of memory available, below the 1024 MiB the pipeline asks for", retryAfter: .seconds(1800)))
}

@Test func everyFailingConditionIsNamed() throws {
    let fake = try FakeSysfs.healthyLaptop()
    try fake.supply("AC", type: "Mains", online: 0)
    try fake.supply("BAT0", type: "Battery", capacity: 10, status: "Discharging")
    try fake.zone(0, type: "acpitz", millidegrees: 90_000)
    try fake.memAvailable(kilobytes: 100 * 1024)
    guard case let .defer(reason, _) = policy.decide(DeviceReadings.read(root: fake.root)) else {
        Issue.record("expected a deferral")
        return
    }
    #expect(reason.components(separatedBy: "; ").count == 3)
}

@Test func machineWithoutBatteryOrThermalZonesProceeds() throws {
    let fake = FakeSysfs()
    try fake.memAvailable(kilobytes: 4 * 1024 * 1024)
    let readings = DeviceReadings.read(root: fake.root)
    #expect(readings.powerSupplies.isEmpty && readings.thermalZones.isEmpty)
    #expect(readings.onExternalPower == nil)
    #expect(policy.decide(readings) == .proceed)
    // Nothing readable at all (no /proc either) still proceeds: missing readings never defer.
    #expect(policy.decide(DeviceReadings.read(root: FakeSysfs().root)) == .proceed)
}

@Test func peripheralBatteryIsIgnored() throws {
    let fake = FakeSysfs()
    try fake.supply("hidpp_battery_0", type: "Battery", capacity: 5, status: "Discharging", scope: "Device")
    let readings = DeviceReadings.read(root: fake.root)
    #expect(readings.batteries.isEmpty)
    #expect(policy.decide(readings) == .proceed)
}

@Test func batteryStatusDecidesPowerWhenNoAdapterReportsOnline() throws {
    let fake = FakeSysfs()
    try fake.supply("BAT1", type: "Battery", capacity: 12, status: "Discharging")
    #expect(DeviceReadings.read(root: fake.root).onExternalPower == false)
    try fake.supply("BAT1", type: "Battery", capacity: 12, status: "Not charging")
    #expect(DeviceReadings.read(root: fake.root).onExternalPower == true)
}

@Test func bogusThermalReadingsAreSkipped() throws {
    let fake = FakeSysfs()
    try fake.zone(0, type: "broken", millidegrees: -273_200)
    try fake.zone(10, type: "cpu", millidegrees: 40_000)
    try fake.zone(2, type: "gpu", millidegrees: 41_000)
    let zones = DeviceReadings.read(root: fake.root).thermalZones
    #expect(zones.map(\.name) == ["thermal_zone2", "thermal_zone10"])
}

@Test func thresholdsComeFromThePipeline() throws {
    let fake = try FakeSysfs.healthyLaptop()
    try fake.zone(1, type: "x86_pkg_temp", millidegrees: 70_000)
    let strict = try Pipeline.parse(Data(#"{"device": {"max_temperature_celsius": 65, "retry_after_minutes": 5}}"#.utf8), source: "s")
    guard case let .defer(_, retryAfter) = strict.device.decide(DeviceReadings.read(root: fake.root)) else {
        Issue.record("expected a deferral at 70 °C with a 65 °C limit")
        return
    }
    #expect(retryAfter == .seconds(300))
}

@Test func deviceCommandPrintsReadingsAndDecision() throws {
    let fake = try FakeSysfs.healthyLaptop()
    try fake.supply("AC", type: "Mains", online: 0)
    try fake.supply("BAT0", type: "Battery", capacity: 18, status: "Discharging")
    let result = try Executables.run("adapt", ["device", "--root", fake.root.path, "--json"])
    #expect(result.status == 0)
    let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    #expect(json?["decision"] as? String == "defer")
    #expect(json?["reason"] as? String == "on battery at 18%, below the 30% the pipeline asks for")
    #expect(json?["retry_after_seconds"] as? Int == 1800)
    #expect(json?["battery_percent"] as? Int == 18)
    let text = try Executables.run("adapt", ["device", "--root", fake.root.path])
    #expect(text.stdout.contains("defer: on battery at 18%"))
}

@Test func thisMachinesProcfsIsReadable() {
    // /proc/meminfo reports a size of 0; reading it must not trust the size. MemAvailable exists since Linux 3.14.
    let readings = DeviceReadings.read()
    #expect((readings.availableMemoryBytes ?? 0) > 0)
}
