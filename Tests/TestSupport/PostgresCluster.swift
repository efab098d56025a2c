import AdaptCore
import Foundation
import Storage
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL cluster for tests: `initdb` into a temporary directory, a server started with
/// `pg_ctl` on a free loopback port (its Unix socket in that directory too), stopped and deleted at the end.
/// No system service, port or directory outside the temporary one is touched.
///
/// PostgreSQL refuses to run as root. When the tests run as root the cluster's directory is given to `nobody`
/// and `initdb`, `pg_ctl` and so the server run as that user (through `setpriv`); the tests connect over TCP
/// as the cluster's superuser `adapt`, trusted on loopback only.
///
/// `@unchecked Sendable`: every stored property is set once in `init`.
public final class PostgresCluster: @unchecked Sendable {
    public let port: Int
    public let directory: TemporaryDirectory
    private let binaries: URL
    /// The addresses the server listens on: loopback, and those asked for at `init`.
    private let listenAddresses: String
    /// The cluster's data directory (`initdb -D`): tests read the database's files there.
    public var dataDirectory: String { directory.path + "/data" }

    /// Starts a new cluster; call `stop()` when done (`shared` stops itself when the test process exits).
    /// Besides loopback, the server listens on `alsoListeningOn` (addresses this machine has, such as the near
    /// end of a `NetworkNamespace`) and trusts connections from `trusting` (CIDR subnets, such as the
    /// namespace's), so that programs on other hosts of the test reach it.
    public init(alsoListeningOn extraAddresses: [String] = [], trusting subnets: [String] = []) throws {
        guard let binaries = Self.serverBinaries() else { throw Self.missingServer }
        self.binaries = binaries
        listenAddresses = (["127.0.0.1"] + extraAddresses).joined(separator: ",")
        directory = TemporaryDirectory("adapt-pg")
        if getuid() == 0 {
            _ = chown(directory.path, Self.nobody, Self.nogroup)
            _ = chmod(directory.path, 0o700)
        }
        try Self.runAsServerUser(binaries.appendingPathComponent("initdb"), [
            "-D", directory.path + "/data", "-U", "adapt", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync",
        ], in: directory.path)
        if !subnets.isEmpty {
            let rules = subnets.map { "host all adapt \($0) trust\n" }.joined()
            let access = try FileHandle(forWritingTo: URL(fileURLWithPath: directory.path + "/data/pg_hba.conf"))
            defer { try? access.close() }
            try access.seekToEnd()
            try access.write(contentsOf: Data(rules.utf8))
        }
        var lastError: Error = Self.missingServer
        for _ in 0..<5 {
            let candidate = Self.freePort()
            do {
                try Self.runAsServerUser(binaries.appendingPathComponent("pg_ctl"), [
                    "-D", directory.path + "/data", "-l", directory.path + "/server.log", "-w", "-t", "60", "start",
                    "-o", "-p \(candidate) -k \(directory.path) -c listen_addresses=\(listenAddresses) -c fsync=off "
                        + "-c full_page_writes=off -c max_connections=200",
                ], in: directory.path)
                port = candidate
                Self.startWatchdog(directory: directory.path)
                return
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// One cluster for the whole test process, started on first use and stopped at exit.
    public static func shared() throws -> PostgresCluster {
        try sharedCluster.withLock { cluster in
            if let cluster { return cluster }
            let started = try PostgresCluster()
            cluster = started
            atexit { try? PostgresCluster.sharedCluster.withLock { $0 }?.stop() }
            return started
        }
    }

    private static let sharedCluster = Locked<PostgresCluster?>(nil)

    /// The libpq connection string of `database` as the superuser, reaching the server at `host` (loopback
    /// unless one of the addresses given at `init`).
    public func connectionString(database: String = "postgres", host: String = "127.0.0.1") -> String {
        "postgresql://adapt@\(host):\(port)/\(database)?connect_timeout=10"
    }

    /// Creates a fresh, empty database (a test's own) and returns its connection string.
    public func makeDatabase() throws -> String {
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        let admin = try PostgresConnection(connectionString())
        try admin.execute("CREATE DATABASE \(name)")
        return connectionString(database: String(name))
    }

    /// Stops the server immediately (open connections are cut) and leaves the data for `start()`.
    public func stopServer() throws {
        try Self.runAsServerUser(binaries.appendingPathComponent("pg_ctl"),
                                 ["-D", dataDirectory, "-m", "immediate", "-w", "stop"], in: directory.path)
    }

    /// Starts the server again on the same port after `stopServer()`.
    public func startServer() throws {
        try Self.runAsServerUser(binaries.appendingPathComponent("pg_ctl"), [
            "-D", dataDirectory, "-l", directory.path + "/server.log", "-w", "-t", "60", "start",
            "-o", "-p \(port) -k \(directory.path) -c listen_addresses=\(listenAddresses) -c fsync=off "
                + "-c full_page_writes=off -c max_connections=200",
        ], in: directory.path)
    }

    /// Stops the server; the temporary directory goes when the cluster is released.
    public func stop() throws {
        try Self.runAsServerUser(binaries.appendingPathComponent("pg_ctl"),
                                 ["-D", dataDirectory, "-m", "fast", "-w", "stop"], in: directory.path)
    }

    // MARK: Internals

    private static let missingServer = SetupProblem.missingTool(
        need: "PostgreSQL's initdb and pg_ctl were not found (on PATH or under /usr/lib/postgresql/*/bin); "
            + "run scripts/bootstrap, which installs Debian's postgresql package")

    private static let nobody: uid_t = 65534
    private static let nogroup: gid_t = 65534

    /// The directory holding initdb and pg_ctl: PATH first, then Debian's versioned directories, newest first.
    static func serverBinaries() -> URL? {
        let fileManager = FileManager.default
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for entry in path.split(separator: ":") where fileManager.isExecutableFile(atPath: "\(entry)/initdb")
            && fileManager.isExecutableFile(atPath: "\(entry)/pg_ctl") {
            return URL(fileURLWithPath: String(entry))
        }
        let versions = (try? fileManager.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
            let bin = "/usr/lib/postgresql/\(version)/bin"
            if fileManager.isExecutableFile(atPath: bin + "/initdb") { return URL(fileURLWithPath: bin) }
        }
        return nil
    }

    /// Runs a server program in `directory`, as `nobody` when this process is root, and waits for it
    /// (`DetachedSpawn`: the server `pg_ctl start` leaves running must not hold this process's files).
    private static func runAsServerUser(_ program: URL, _ arguments: [String], in directory: String) throws {
        var command = ["/usr/bin/env", "-C", directory, "LC_ALL=C"]
        if getuid() == 0 { command += ["/usr/bin/setpriv", "--reuid=\(nobody)", "--regid=\(nogroup)", "--clear-groups", "--"] }
        command += [program.path] + arguments
        let outputPath = directory + "/\(program.lastPathComponent).out"
        guard let pid = DetachedSpawn.start(command, outputPath: outputPath) else {
            throw SetupProblem.commandFailed(command: program.lastPathComponent, status: errno, output: "could not start it")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        guard exitStatus == 0 else {
            var log = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            if let server = try? String(contentsOfFile: directory + "/server.log", encoding: .utf8) { log += "\n" + server }
            throw SetupProblem.commandFailed(command: program.lastPathComponent, status: exitStatus, output: log)
        }
    }

    /// Once the test process is gone, even SIGKILLed: stops the server the immediate way (SIGQUIT to the
    /// postmaster, which is what `pg_ctl stop -m immediate` sends) and deletes the cluster's directory. After a
    /// normal exit the server is already stopped and only the directory is left to delete.
    private static func startWatchdog(directory: String) {
        Watchdog.leave("postgres-cluster-watchdog", cleanup: """
            if [ -f "$2/data/postmaster.pid" ]; then
              server=$(head -n 1 "$2/data/postmaster.pid")
              kill -QUIT "$server" 2>/dev/null
              while kill -0 "$server" 2>/dev/null; do sleep 0.2; done
            fi
            rm -rf "$2"
            """, arguments: [directory])
    }

    /// A loopback port nobody listens on now (the kernel's choice for port 0).
    private static func freePort() -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
