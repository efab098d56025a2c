import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Pipelines
import Testing
import TestSupport

// Readings the kernel would never give, but a broken driver, a container's fake procfs or a planted symlink can:
// the device policy treats them as not reported instead of trapping or hanging.

@Test func memAvailableTooLargeForBytesIsNotReported() throws {
    let fake = try FakeSysfs.healthyLaptop()
    try fake.write("proc/meminfo", "MemTotal: 16318412 kB\nMemAvailable:   9223372036854775807 kB")
    let readings = DeviceReadings.read(root: fake.root)
    #expect(readings.availableMemoryBytes == nil)
    #expect(policy.decide(readings) == .proceed)
}

@Test func negativeMemAvailableIsNotReported() throws {
    let fake = try FakeSysfs.healthyLaptop()
    try fake.memAvailable(kilobytes: -5)
    #expect(DeviceReadings.read(root: fake.root).availableMemoryBytes == nil)
}

@Test func batteryCapacityOutsideZeroToHundredIsNotReported() throws {
    let fake = FakeSysfs()
    try fake.supply("BAT0", type: "Battery", capacity: Int.max, status: "Discharging")
    try fake.supply("BAT1", type: "Battery", capacity: 1, status: "Discharging")
    let readings = DeviceReadings.read(root: fake.root)
    #expect(readings.batteryPercent == 1)
    #expect(!policy.decide(readings).shouldProceed)
}

@Test func decodedReadingsWithHugeCapacitiesDoNotOverflow() {
    // Readings also arrive as values (tests, a recorded run); the mean must not trap on them either.
    let readings = DeviceReadings(powerSupplies: [
        .init(name: "BAT0", type: "Battery", capacity: Int.max, status: "Discharging"),
        .init(name: "BAT1", type: "Battery", capacity: Int.max, status: "Discharging"),
    ])
    #expect(readings.batteryPercent == nil)
    #expect(policy.decide(readings) == .proceed)
}

@Test func meminfoSymlinkedToDevZeroIsNotRead() throws {
    let fake = FakeSysfs()
    try FileManager.default.createDirectory(at: fake.root.appendingPathComponent("proc"), withIntermediateDirectories: true)
    try FileManager.default.createSymbolicLink(atPath: fake.root.appendingPathComponent("proc/meminfo").path,
                                               withDestinationPath: "/dev/zero")
    #expect(DeviceReadings.read(root: fake.root).availableMemoryBytes == nil)
}

@Test func batteryAttributeThatIsAFIFODoesNotBlock() throws {
    let fake = FakeSysfs()
    try fake.supply("BAT0", type: "Battery", status: "Discharging")
    let capacity = fake.root.appendingPathComponent("sys/class/power_supply/BAT0/capacity")
    #expect(mkfifo(capacity.path, 0o600) == 0)
    let readings = DeviceReadings.read(root: fake.root)
    #expect(readings.batteries.count == 1 && readings.batteryPercent == nil)
}

@Test func onlyTheFirst64KBOfAFileAreRead() throws {
    let fake = FakeSysfs()
    let padding = String(repeating: "Padding:        0 kB\n", count: 4000)  // about 84 KB
    try fake.write("proc/meminfo", padding + "MemAvailable:   4096 kB")
    #expect(DeviceReadings.read(root: fake.root).availableMemoryBytes == nil)
    try fake.write("proc/meminfo", "MemAvailable:   4096 kB\n" + padding)
    #expect(DeviceReadings.read(root: fake.root).availableMemoryBytes == Int64(4096) * 1024)
}

@Test func deviceCommandSurvivesImplausibleReadings() throws {
    let fake = FakeSysfs()
    try fake.supply("BAT0", type: "Battery", capacity: Int.max, status: "Discharging")
    try fake.supply("BAT1", type: "Battery", capacity: 1, status: "Discharging")
    try fake.write("proc/meminfo", "MemAvailable:   9223372036854775807 kB")
    let result = try Executables.run("adapt", ["device", "--root", fake.root.path, "--json"])
    #expect(result.status == 0)
    let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    #expect(json?["battery_percent"] as? Int == 1)
}
