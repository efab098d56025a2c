import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A host of its own for a test: a network namespace joined to this machine's root namespace by a veth pair,
/// on a private /30 (`10.213.N.0/30`: this side `.1`, the namespace `.2`). Programs started with `start` run in
/// the namespace and reach this side only over the pair, so `cut()` (this side's link down) is a network
/// partition and `restore()` ends it.
///
/// The namespace is named after its subnet (`adapt-net-N`): `ip netns add` refusing a name already taken is
/// what keeps two namespaces, of this process or another, off the same subnet. It is deleted (and the veth pair
/// with it) when the value is released, and by a watchdog left behind when the test process is SIGKILLed.
///
/// Needs root and iproute2's `ip`.
///
/// `@unchecked Sendable`: every stored property is set once in `init`.
public final class NetworkNamespace: @unchecked Sendable {
    public let name: String
    /// This side's address, where a server for the namespace listens.
    public let hostAddress: String
    /// The namespace's address.
    public let address: String
    /// The pair's subnet in CIDR notation (for a server's access rules).
    public let subnet: String
    private let hostLink: String

    public init() throws {
        guard let tool = Self.ipTool else { throw Self.missingTool }
        var taken: Int?
        for candidate in Self.candidateSubnets() {
            do {
                try Self.ip(tool, ["netns", "add", "adapt-net-\(candidate)"])
                taken = candidate
                break
            } catch let SetupProblem.commandFailed(_, _, output) where output.contains("exists") {
                continue  // another namespace has this subnet
            }
        }
        guard let number = taken else {
            throw SetupProblem.exhausted(remedy: "every 10.213.N.0/30 namespace (adapt-net-0 … adapt-net-255) is taken; "
                                         + "delete stale ones with `ip netns del adapt-net-N`")
        }
        name = "adapt-net-\(number)"
        hostLink = "adnet\(number)h"
        hostAddress = "10.213.\(number).1"
        address = "10.213.\(number).2"
        subnet = "10.213.\(number).0/30"
        Self.startWatchdog(namespace: name, hostLink: hostLink, tool: tool)
        let peer = "adnet\(number)n"
        do {
            // A veth left by a namespace deleted while a process still held it would block the new pair.
            _ = try? Self.ip(tool, ["link", "del", hostLink])
            try Self.ip(tool, ["link", "add", hostLink, "type", "veth", "peer", "name", peer])
            try Self.ip(tool, ["link", "set", peer, "netns", name])
            try Self.ip(tool, ["addr", "add", hostAddress + "/30", "dev", hostLink])
            try Self.ip(tool, ["link", "set", hostLink, "up"])
            try Self.ip(tool, ["-n", name, "addr", "add", address + "/30", "dev", peer])
            try Self.ip(tool, ["-n", name, "link", "set", peer, "up"])
            try Self.ip(tool, ["-n", name, "link", "set", "lo", "up"])
        } catch {
            _ = try? Self.ip(tool, ["link", "del", hostLink])
            _ = try? Self.ip(tool, ["netns", "del", name])
            throw error
        }
    }

    deinit {
        guard let tool = Self.ipTool else { return }
        // Programs a failed test left running inside would otherwise keep retrying a server that is gone.
        let inside = ((try? Self.ip(tool, ["netns", "pids", name])) ?? "").split(separator: "\n").compactMap { pid_t($0) }
        for pid in inside { kill(pid, SIGKILL) }
        _ = try? Self.ip(tool, ["link", "del", hostLink])
        _ = try? Self.ip(tool, ["netns", "del", name])
    }

    /// Takes this side's link down: packets between the namespace and this side are dropped, connections stay
    /// open without an answer, as when a cable is pulled.
    public func cut() throws { try Self.ip(Self.requiredTool(), ["link", "set", hostLink, "down"]) }

    /// Brings the link up again.
    public func restore() throws { try Self.ip(Self.requiredTool(), ["link", "set", hostLink, "up"]) }

    /// Starts `executable` in the namespace (`ip netns exec`, which execs it: the process's pid is the program's),
    /// in `workingDirectory`, its output into files there.
    public func start(_ executable: URL, _ arguments: [String], in workingDirectory: URL) throws -> RunningProcess {
        try Executables.start(executableAt: Self.requiredTool(), ["netns", "exec", name, executable.path] + arguments,
                              workingDirectory: workingDirectory, outputIn: workingDirectory)
    }

    // MARK: Internals

    private static let ipTool: URL? = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
        .map { URL(fileURLWithPath: $0) }

    private static func requiredTool() throws -> URL {
        guard let ipTool else { throw missingTool }
        return ipTool
    }

    /// Subnet numbers from a random start, so namespaces made at once by several processes rarely race for one.
    private static func candidateSubnets() -> [Int] {
        let start = Int.random(in: 0..<256)
        return (0..<256).map { (start + $0) % 256 }
    }

    @discardableResult
    private static func ip(_ tool: URL, _ arguments: [String]) throws -> String {
        let result = try Executables.run(executableAt: tool, arguments)
        guard result.status == 0 else {
            throw SetupProblem.commandFailed(command: "ip " + arguments.joined(separator: " "), status: result.status,
                                             output: result.stderr)
        }
        return result.stdout
    }

    private static let missingTool = SetupProblem.missingTool(
        need: "iproute2's ip was not found at /usr/sbin/ip or /sbin/ip; install Debian's iproute2")

    /// Once the test process is gone, even SIGKILLed: kills what still runs inside (programs it started would
    /// outlive it), deletes the veth pair (a socket left retransmitting over a cut link would keep the
    /// namespace, and so the pair, alive for minutes) and the namespace.
    private static func startWatchdog(namespace: String, hostLink: String, tool: URL) {
        Watchdog.leave("network-namespace-watchdog", cleanup: """
            for pid in $("$3" netns pids "$2" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
            "$3" link del "$4" 2>/dev/null
            "$3" netns del "$2" 2>/dev/null
            """, arguments: [namespace, tool.path, hostLink])
    }
}
