import AdaptCore
import Foundation

/// What the kernel says about power, temperature and memory, read from sysfs and procfs under a root
/// directory that tests point at a fake tree.
///
/// Sources (Linux ABI, Documentation/ABI/testing/sysfs-class-power and sysfs-class-thermal; proc(5)):
/// `/sys/class/power_supply/*/{type,online,capacity,status,scope}`, `/sys/class/thermal/thermal_zone*/{temp,type}`
/// (millidegrees Celsius) and the `MemAvailable:` line of `/proc/meminfo` (kB).
public struct DeviceReadings: Sendable, Equatable, Codable {
    public struct PowerSupply: Sendable, Equatable, Codable {
        public var name: String
        /// `Mains`, `Battery`, `USB`, `UPS`, …
        public var type: String
        public var online: Bool?
        public var capacity: Int?
        /// `Charging`, `Discharging`, `Full`, `Not charging`, `Unknown`
        public var status: String?
        /// `Device` marks the battery of a peripheral (a wireless mouse), which says nothing about this machine.
        public var scope: String?

        public init(name: String, type: String, online: Bool? = nil, capacity: Int? = nil, status: String? = nil,
                    scope: String? = nil) {
            self.name = name
            self.type = type
            self.online = online
            self.capacity = capacity
            self.status = status
            self.scope = scope
        }

        var isSystemBattery: Bool { type == "Battery" && scope != "Device" }
    }

    public struct ThermalZone: Sendable, Equatable, Codable {
        public var name: String
        public var type: String?
        public var celsius: Double

        public init(name: String, type: String? = nil, celsius: Double) {
            self.name = name
            self.type = type
            self.celsius = celsius
        }
    }

    public var powerSupplies: [PowerSupply]
    public var thermalZones: [ThermalZone]
    public var availableMemoryBytes: Int64?

    public init(powerSupplies: [PowerSupply] = [], thermalZones: [ThermalZone] = [], availableMemoryBytes: Int64? = nil) {
        self.powerSupplies = powerSupplies
        self.thermalZones = thermalZones
        self.availableMemoryBytes = availableMemoryBytes
    }

    enum CodingKeys: String, CodingKey {
        case powerSupplies = "power_supplies", thermalZones = "thermal_zones", availableMemoryBytes = "available_memory_bytes"
    }

    // MARK: Interpretation

    /// The machine's own batteries (peripherals excluded).
    public var batteries: [PowerSupply] { powerSupplies.filter(\.isSystemBattery) }

    /// Nil when there is no battery (a desktop or a server: always on external power as far as we care).
    /// Otherwise true when a non-battery supply is online, or, if none reports `online`, when a battery says it
    /// is charging, full or held at a charge threshold.
    public var onExternalPower: Bool? {
        guard !batteries.isEmpty else { return nil }
        let adapters = powerSupplies.filter { $0.type != "Battery" && $0.online != nil }
        if !adapters.isEmpty { return adapters.contains { $0.online == true } }
        return batteries.contains { ["Charging", "Full", "Not charging"].contains($0.status ?? "") }
    }

    /// The mean charge of the machine's batteries that report a plausible one. The ABI defines `capacity` as
    /// 0–100; anything else (a firmware bug, a hand-edited readings file) is treated as not reported, which also
    /// keeps the sum far from overflow.
    public var batteryPercent: Int? {
        let charges = batteries.compactMap(\.capacity).filter(Self.plausibleCharge.contains)
        guard !charges.isEmpty else { return nil }
        return charges.reduce(0, +) / charges.count
    }

    /// sysfs-class-power: "capacity … Valid values: 0 - 100".
    static let plausibleCharge = 0...100

    /// More than any x86-64 or arm64 machine can address (57-bit virtual addresses); a larger MemAvailable is
    /// a bogus reading, not memory.
    static let plausibleMemoryBytes: ClosedRange<Int64> = 0...(Int64(1) << 60)

    public var hottestZone: ThermalZone? { thermalZones.max { $0.celsius < $1.celsius } }

    // MARK: Reading

    /// Reads the current state under `root` (`/` on a real machine). Missing files are missing readings.
    public static func read(root: URL = URL(fileURLWithPath: "/")) -> DeviceReadings {
        let supplies = root.appendingPathComponent("sys/class/power_supply")
        let thermal = root.appendingPathComponent("sys/class/thermal")
        var readings = DeviceReadings()
        for name in entries(of: supplies) {
            let dir = supplies.appendingPathComponent(name)
            guard let type = text(dir.appendingPathComponent("type")) else { continue }
            readings.powerSupplies.append(PowerSupply(
                name: name, type: type,
                online: text(dir.appendingPathComponent("online")).flatMap(Int.init).map { $0 != 0 },
                capacity: text(dir.appendingPathComponent("capacity")).flatMap(Int.init)
                    .flatMap { plausibleCharge.contains($0) ? $0 : nil },
                status: text(dir.appendingPathComponent("status")),
                scope: text(dir.appendingPathComponent("scope"))))
        }
        for name in entries(of: thermal) where name.hasPrefix("thermal_zone") {
            let dir = thermal.appendingPathComponent(name)
            guard let milli = text(dir.appendingPathComponent("temp")).flatMap(Int.init) else { continue }
            let celsius = Double(milli) / 1000
            // Some firmware reports -273 °C or absurd values for absent sensors; they are not temperatures.
            guard celsius > -60, celsius < 250 else { continue }
            readings.thermalZones.append(ThermalZone(name: name, type: text(dir.appendingPathComponent("type")),
                                                     celsius: celsius))
        }
        readings.availableMemoryBytes = text(root.appendingPathComponent("proc/meminfo")).flatMap(memAvailable)
        return readings
    }

    /// `MemAvailable:   123456 kB` → bytes; nil when the line is missing or the value is implausible (negative,
    /// or so large that converting it to bytes would overflow).
    static func memAvailable(_ meminfo: String) -> Int64? {
        for line in meminfo.split(separator: "\n") where line.hasPrefix("MemAvailable:") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, let value = Int64(fields[1]) else { return nil }
            let unit = fields.count >= 3 ? fields[2].lowercased() : "kb"
            let (bytes, overflow) = unit == "kb" ? value.multipliedReportingOverflow(by: 1024) : (value, false)
            guard !overflow, plausibleMemoryBytes.contains(bytes) else { return nil }
            return bytes
        }
        return nil
    }

    /// Directory entries sorted by name with numbers in order (thermal_zone2 before thermal_zone10).
    private static func entries(of directory: URL) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.sorted { $0.compare($1, options: .numeric) == .orderedAscending }
    }

    /// The most read of any one file: every attribute we read is a line, and /proc/meminfo is about 1.5 KB.
    static let maximumFileBytes = 64 * 1024

    /// The trimmed contents of a small sysfs/procfs file. Read through a handle rather than by size: procfs files
    /// report a size of 0, so anything trusting the size would read nothing. Only regular files are opened (sysfs
    /// attributes and procfs entries are), and at most `maximumFileBytes` is read, so a symlink planted to
    /// /dev/zero or a FIFO cannot make the policy hang or fill memory.
    static func text(_ url: URL) -> String? {
        guard (try? RegularFile.requireReadable(url)) != nil,
              let handle = try? FileHandle(forReadingFrom: url) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: maximumFileBytes) else { return nil }
        let value = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return value.isEmpty ? nil : value
    }
}
