import Foundation

/// A fake `/sys` and `/proc` tree for the device policy (`ADAPT_SYSFS_ROOT`): a battery with a charger, one
/// thermal zone and a MemAvailable line, each rewritable while a worker reads it.
struct FakeDevice {
    let root: URL

    init(root: URL) throws {
        self.root = root
        try write("sys/class/power_supply/AC/type", "Mains")
        try write("sys/class/power_supply/BAT0/type", "Battery")
        try write("sys/class/power_supply/BAT0/scope", "System")
        try write("sys/class/thermal/thermal_zone0/type", "x86_pkg_temp")
        try set(onMains: true, battery: 90, celsius: 45, availableMB: 8192)
    }

    func set(onMains: Bool, battery: Int, celsius: Double, availableMB: Int) throws {
        try write("sys/class/power_supply/AC/online", onMains ? "1" : "0")
        try write("sys/class/power_supply/BAT0/capacity", String(battery))
        try write("sys/class/power_supply/BAT0/status", onMains ? "Charging" : "Discharging")
        try write("sys/class/thermal/thermal_zone0/temp", String(Int(celsius * 1000)))
        try write("proc/meminfo", "MemTotal:       16000000 kB\nMemAvailable:   \(availableMB * 1024) kB\n")
    }

    /// The CPUs the process may run on, as `/proc/self/status` lists them (`0-2`): what `blas_threads: auto` counts.
    func allowCPUs(_ list: String) throws {
        try write("proc/self/status", "Name:\tadapt-worker\nCpus_allowed_list:\t\(list)")
    }

    private func write(_ path: String, _ text: String) throws {
        let url = root.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data((text + "\n").utf8).write(to: url)
    }
}
