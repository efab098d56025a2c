import Foundation

extension DeviceReadings {
    /// How many CPUs this process may run on: the `Cpus_allowed_list:` line of `/proc/self/status` under `root`
    /// (proc(5): the affinity mask, which `taskset`, `systemd`'s `CPUAffinity=` and cgroup cpusets narrow); nil when
    /// the file or the line cannot be read. The train and eval steps size a `blas_threads: auto` count by it.
    public static func allowedCores(root: URL = URL(fileURLWithPath: "/")) -> Int? {
        text(root.appendingPathComponent("proc/self/status")).flatMap(allowedCores(status:))
    }

    /// The count of the `Cpus_allowed_list:` line (`0-3,8,10-11` → 7) of a status file's text.
    static func allowedCores(status: String) -> Int? {
        for line in status.split(separator: "\n") where line.hasPrefix("Cpus_allowed_list:") {
            return cpuCount(list: line.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    /// The number of CPUs a kernel CPU list names (`0-3,8`: ranges and single numbers, comma-separated); nil when
    /// the list is empty or malformed.
    static func cpuCount(list: String) -> Int? {
        var count = 0
        for part in list.split(separator: ",", omittingEmptySubsequences: false) {
            let bounds = part.split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
            switch bounds.count {
            case 1:
                guard bounds[0] != nil else { return nil }
                count += 1
            case 2:
                guard let low = bounds[0], let high = bounds[1], low <= high else { return nil }
                count += high - low + 1
            default:
                return nil
            }
        }
        return count > 0 ? count : nil
    }
}
