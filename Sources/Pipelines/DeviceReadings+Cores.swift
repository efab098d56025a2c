import Foundation

extension DeviceReadings {
    /// How many CPUs this process may run on: the `Cpus_allowed_list:` line of `/proc/self/status` under `root`
    /// (proc(5): the affinity mask, which `taskset`, `systemd`'s `CPUAffinity=` and cgroup cpusets narrow); nil when
    /// the file or the line cannot be read. The train and eval steps size a `blas_threads: auto` count by it.
    public static func allowedCores(root: URL = URL(fileURLWithPath: "/")) -> Int? {
        text(root.appendingPathComponent("proc/self/status")).flatMap(allowedCores(status:))
    }

    /// CPUs' worth of time this process's control group may use: ⌈quota ÷ period⌉ of the tightest CPU limit on the
    /// way from its cgroup (`/proc/self/cgroup` under `root`) up to the hierarchy's root, in cgroup v2's `cpu.max` or
    /// v1's `cpu.cfs_quota_us` and `cpu.cfs_period_us`; nil when no limit is set or none can be read. A container
    /// started with `--cpus 2` keeps every host CPU in its affinity and has this limit of 2: threads past it only
    /// wait for their share.
    public static func cgroupCPULimit(root: URL = URL(fileURLWithPath: "/")) -> Int? {
        guard let membership = text(root.appendingPathComponent("proc/self/cgroup")) else { return nil }
        var limits: [Int] = []
        for line in membership.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            let hierarchy: String
            if fields[0] == "0" && fields[1].isEmpty {
                hierarchy = "sys/fs/cgroup"                                           // v2, unified
            } else if fields[1].split(separator: ",").contains("cpu") {
                hierarchy = "sys/fs/cgroup/" + fields[1]                               // v1: cpu or cpu,cpuacct
            } else {
                continue
            }
            // The group and its ancestors: "/a/b", "/a", "/". Inside a cgroup namespace the path is "/" already.
            var path = String(fields[2])
            while true {
                let directory = root.appendingPathComponent(hierarchy + (path == "/" ? "" : path))
                if let limit = cpuLimit(directory) { limits.append(limit) }
                guard path != "/", let slash = path.lastIndex(of: "/") else { break }
                path = slash == path.startIndex ? "/" : String(path[..<slash])
            }
        }
        return limits.min()
    }

    /// The limit one cgroup directory sets, from either version's files; nil for none (`max`, or a quota of -1).
    static func cpuLimit(_ directory: URL) -> Int? {
        if let line = text(directory.appendingPathComponent("cpu.max")) {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let quota = Int(parts[0]), let period = Int(parts[1]) else { return nil }
            return limit(quota: quota, period: period)
        }
        guard let quota = text(directory.appendingPathComponent("cpu.cfs_quota_us")).flatMap({ Int($0) }),
              let period = text(directory.appendingPathComponent("cpu.cfs_period_us")).flatMap({ Int($0) }) else { return nil }
        return limit(quota: quota, period: period)
    }

    private static func limit(quota: Int, period: Int) -> Int? {
        guard quota > 0, period > 0 else { return nil }
        return max(1, (quota + period - 1) / period)
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
