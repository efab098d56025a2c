/// The lease-owner name of a worker executable, shown as `lease_owner` in `adapt jobs` and events.
///
/// `host/pid` alone names a process, but a pid is reused once its process is reaped; `adapt work` gives each
/// worker it spawns a tag of its own (its pid and a spawn counter), so when it reaps a worker it releases
/// exactly that worker's leases. The pid stays last, where tools and tests read it.
public enum WorkerLeaseOwner {
    public static func name(host: String, tag: String?, pid: Int32) -> String {
        tag.map { "\(host)/\($0)/\(pid)" } ?? "\(host)/\(pid)"
    }

    /// A tag is one path component of printable ASCII, so the owner stays a `/`-separated name.
    public static func isValidTag(_ tag: String) -> Bool {
        !tag.isEmpty && tag.count <= 64 && tag.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 32 && $0.value < 127 && $0 != "/" }
    }

    /// The parts of a name `name(host:tag:pid:)` made with a tag; nil for any other owner.
    public static func parse(_ owner: String) -> (host: String, tag: String, pid: Int32)? {
        let parts = owner.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, let pid = Int32(parts[2]), pid > 0 else { return nil }
        return (String(parts[0]), String(parts[1]), pid)
    }
}
