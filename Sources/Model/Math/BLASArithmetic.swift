import CBLAS
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What the bits of a run's arithmetic depend on, beyond its inputs: the OpenBLAS build and the kernels it
/// picked for this CPU (Debian's OpenBLAS is built with DYNAMIC_ARCH and picks them at load time, so an AVX2
/// machine and an AVX-512 one disagree in the last bits of a matrix product), the thread count, and our own
/// kernels (portable Swift SIMD, compiled for the architecture's baseline, so they vary only with it).
public struct BLASArithmetic: Sendable, Equatable, Codable, CustomStringConvertible {
    /// `OpenBLAS 0.3.21`.
    public let openblas: String
    /// The kernel set OpenBLAS runs (`Haswell`, `SkylakeX`, `Zen`, …): `openblas_get_corename()`.
    public let coreType: String
    public let threads: Int
    /// Our element-wise and quantized kernels: `swift-simd-<architecture>`.
    public let kernels: String
    /// Whether the core type was pinned through `OPENBLAS_CORETYPE` rather than picked from the CPU.
    public let pinned: Bool
    /// The integer kernels of single-token decoding (`int8-avx512vnni`, `int8-avx2` or `int8-portable-<architecture>`, picked at run
    /// time from the CPU's flags; `QuantizedMatVec`). Nil in records made before they existed. Not part of
    /// `difference`: both compilations give the same bits, and training and scoring never run them.
    public let quantizedKernels: String?
    /// The products of a prompt of inference (`int8-v1` or `sgemm`; `QuantizedMatMul`). Nil in records
    /// made before the choice existed. Not part of `difference`: a generation prompt is never replayed; training
    /// and scoring run the same kernels only under `forwardKernels`, which is.
    public let promptKernels: String?
    /// How the step kept the frozen model (`BaseWeightStorage`: `quantized` or `f32`). Nil in records made
    /// before the choice existed (they kept f32). Not part of `difference`: a step's storage is fixed by its
    /// code, not by the machine, so a replay uses the recorded one.
    public var baseWeights: String?
    /// The forward products of a training or scoring pass over a base kept quantized (`ForwardProducts.kernelName`:
    /// `int8-v1` or `sgemm`; records made before `int8-v1` say `int8-avx512vnni` for the same arithmetic). Nil where
    /// the step was not asked for int8 (every record before the choice), which computed with sgemm. Part of
    /// `difference`: `ADAPT_PROMPT_KERNELS=sgemm` computes other bits than the int8 kernels recorded.
    public var forwardKernels: String?

    enum CodingKeys: String, CodingKey {
        case openblas, threads, kernels, pinned
        case coreType = "core_type"
        case quantizedKernels = "quantized_kernels"
        case promptKernels = "prompt_kernels"
        case baseWeights = "base_weights"
        case forwardKernels = "forward_kernels"
    }

    public init(openblas: String, coreType: String, threads: Int, kernels: String, pinned: Bool, quantizedKernels: String? = nil,
                baseWeights: String? = nil, promptKernels: String? = nil) {
        self.openblas = openblas
        self.coreType = coreType
        self.threads = threads
        self.kernels = kernels
        self.pinned = pinned
        self.quantizedKernels = quantizedKernels
        self.promptKernels = promptKernels
        self.baseWeights = baseWeights
    }

    public var description: String {
        "\(openblas) core \(coreType)\(pinned ? " (pinned)" : "") × \(threads) thread(s), \(kernels)"
            + (quantizedKernels.map { ", decode \($0)" } ?? "") + (promptKernels.map { ", prompt \($0)" } ?? "") + (baseWeights.map { ", base \($0)" } ?? "")
            + (forwardKernels.map { ", forward \($0)" } ?? "")
    }

    /// This process's arithmetic at `threads` BLAS threads.
    public static func current(threads: Int) -> BLASArithmetic {
        let configuration = String(cString: openblas_get_config())
        let version = configuration.split(separator: " ").prefix(2).joined(separator: " ")
        return BLASArithmetic(openblas: version, coreType: String(cString: openblas_get_corename()), threads: threads,
                              kernels: "swift-simd-\(architecture)", pinned: ProcessInfo.processInfo.environment[BLASCoreType.variable] != nil,
                              quantizedKernels: QuantizedMatVec.kernelName, promptKernels: QuantizedMatMul.kernelName)
    }

    /// Why results computed under `self` and `other` may differ in their bits; nil when they cannot.
    public func difference(from other: BLASArithmetic) -> String? {
        var parts: [String] = []
        if kernels != other.kernels { parts.append("our kernels \(other.kernels) here, \(kernels) recorded") }
        if openblas != other.openblas { parts.append("\(other.openblas) here, \(openblas) recorded") }
        if coreType.lowercased() != other.coreType.lowercased() {
            parts.append("OpenBLAS core type \(other.coreType) here, \(coreType) recorded")
        }
        if threads != other.threads { parts.append("\(other.threads) BLAS thread(s) here, \(threads) recorded") }
        if forwardProducts != other.forwardProducts {
            parts.append("forward products \(other.forwardProducts) here, \(forwardProducts) recorded")
        }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }

    /// The fields (as recorded: `core_type`, `threads`, …) whose values differ between `self` and `other`, in
    /// the order `difference(from:)` names them.
    public func differingFields(from other: BLASArithmetic) -> [String] {
        var fields: [String] = []
        if kernels != other.kernels { fields.append(CodingKeys.kernels.rawValue) }
        if openblas != other.openblas { fields.append(CodingKeys.openblas.rawValue) }
        if coreType.lowercased() != other.coreType.lowercased() { fields.append(CodingKeys.coreType.rawValue) }
        if threads != other.threads { fields.append(CodingKeys.threads.rawValue) }
        if forwardProducts != other.forwardProducts { fields.append(CodingKeys.forwardKernels.rawValue) }
        return fields
    }

    /// `forwardKernels`, a record without it read as the sgemm it computed with, and `int8-avx512vnni` (the name
    /// records made before `int8-v1` hold) as `int8-v1`, the same arithmetic.
    var forwardProducts: String { QuantizedMatMul.canonicalName(forwardKernels ?? "sgemm") }

    static var architecture: String {
        #if arch(x86_64)
        return "x86_64"
        #elseif arch(arm64)
        return "arm64"
        #else
        return "other"
        #endif
    }
}

/// Pins OpenBLAS's kernels so that a deterministic run recorded on one x86-64 machine replays bit for bit on
/// another: every machine with AVX2 and FMA (Haswell and later, Zen) runs the `Haswell` kernels, including
/// AVX-512 machines, where OpenBLAS would otherwise pick SkylakeX's.
///
/// OpenBLAS reads `OPENBLAS_CORETYPE` once, when the dynamic loader runs its constructor, before `main`; so
/// an executable that finds it unset sets it and executes itself again (same pid, same arguments). Debian's
/// 0.3.21 matches the name case-insensitively and does not check it against the CPU (a forced `SkylakeX`
/// on a CPU without AVX-512 would die on its first product), hence the check of the CPU's flags here. A value
/// the user set is kept; `ADAPT_BLAS_CORETYPE=native` leaves OpenBLAS to choose.
public enum BLASCoreType {
    public static let variable = "OPENBLAS_CORETYPE"
    public static let policyVariable = "ADAPT_BLAS_CORETYPE"
    /// The kernel set every AVX2 x86-64 machine can run.
    public static let portable = "Haswell"
    /// Set beside `OPENBLAS_CORETYPE` when adapt chose its value: `policy` (the portable pin) or `resume` (a
    /// worker executed again with the core type of the checkpoint it resumes). Unset while a user's value stands.
    public static let originVariable = "ADAPT_BLAS_CORETYPE_ORIGIN"
    public static let resumeOrigin = "resume"
    /// Set when adapt pinned a process over a core type its user set (to a kernel set `isSafe` under it): the
    /// user's value, given back when the process returns to its own choice.
    public static let userValueVariable = "ADAPT_BLAS_CORETYPE_USER"

    /// The CPU flags (as /proc/cpuinfo names them) each of OpenBLAS's x86-64 kernel sets executes; a core type
    /// not listed is never forced, as OpenBLAS would run it on a CPU that lacks them and die.
    static let requiredFlags: [String: Set<String>] = [
        "prescott": ["pni"], "core2": ["ssse3"], "penryn": ["sse4_1"], "dunnington": ["sse4_1"], "nehalem": ["sse4_2"],
        "sandybridge": ["avx"], "haswell": ["avx2", "fma"], "zen": ["avx2", "fma"],
        "skylakex": ["avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"],
        "cooperlake": ["avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx512_bf16"],
    ]

    /// OpenBLAS's Intel kernel sets, oldest first: each executes only instructions the ones after it execute too.
    static let intelLine = ["prescott", "core2", "penryn", "dunnington", "nehalem", "sandybridge", "haswell", "skylakex", "cooperlake"]

    /// Whether a process may be pinned to `coreType` on a CPU with `flags`.
    public static func canRun(_ coreType: String, cpuFlags flags: Set<String>) -> Bool {
        #if arch(x86_64)
        guard let needed = requiredFlags[coreType.lowercased()] else { return false }
        return needed.isSubset(of: flags)
        #else
        return false
        #endif
    }

    /// The core type this process's user set, or nil when they set none (kept aside while adapt pins another).
    public static func userCoreType(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let kept = environment[userValueVariable] { return kept }
        return environment[originVariable] == nil ? environment[variable] : nil
    }

    /// Whether adapt may compute with `target`'s kernels where its user set `user`: a user sets the variable
    /// because OpenBLAS's own choice computes wrong results or dies on that machine, so only kernel sets known to
    /// be safe there qualify: the user's own, and the older sets of Intel's line, which execute a subset of its
    /// instructions (Zen, which runs AVX2 and FMA, stands at Haswell's place). Zen itself, and anything newer than
    /// the user's set, never replace it.
    public static func isSafe(_ target: String, under user: String) -> Bool {
        let target = target.lowercased(), user = user.lowercased()
        if target == user { return true }
        guard let position = intelLine.firstIndex(of: target) else { return false }
        let ceiling = user == "zen" ? intelLine.firstIndex(of: "haswell") : intelLine.firstIndex(of: user)
        guard let ceiling else { return false }
        return position < ceiling
    }

    /// Why adapt may not pin this process to `target`, or nil when it may: the user set another core type under
    /// which `target` is not known to be safe (`isSafe`), or OpenBLAS ignored the value adapt set.
    public static func repinRefusal(to target: String, environment: [String: String] = ProcessInfo.processInfo.environment,
                                    running: String = String(cString: openblas_get_corename())) -> String? {
        guard let value = environment[variable] else { return nil }
        if let user = userCoreType(environment: environment), !isSafe(target, under: user) {
            return "this worker's \(variable)=\(user) was set by its user, and \(target)'s kernels are not known to be safe "
                + "under it (only \(user)'s and older Intel kernel sets are); where \(target)'s kernels are safe on this machine, "
                + "the same command run with \(variable)=\(target) computes the recorded bits"
        }
        if environment[originVariable] != nil, value.lowercased() != running.lowercased() {
            return "OpenBLAS runs \(running) although \(variable)=\(value)"
        }
        return nil
    }

    /// Whether this process runs a core type it was executed again with to resume a checkpoint.
    public static func isPinnedForResume(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        environment[originVariable] == resumeOrigin && environment[variable] != nil
    }

    /// Executes this program again (same pid, same arguments) with `OPENBLAS_CORETYPE=coreType` marked as pinned
    /// for a resume, or with adapt's own choice when `coreType` is nil (the user's value if they set one, else
    /// the one the next `pinByReexecuting` makes). Returns only when the exec failed, with its errno, the
    /// environment restored.
    public static func reexecute(pinning coreType: String?) -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        let user = userCoreType(environment: environment)
        if let coreType {
            if let user { setenv(userValueVariable, user, 1) }
            setenv(variable, coreType, 1)
            setenv(originVariable, resumeOrigin, 1)
        } else {
            if let user { setenv(variable, user, 1) } else { unsetenv(variable) }
            unsetenv(originVariable)
            unsetenv(userValueVariable)
        }
        let arguments = CommandLine.arguments
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        execv("/proc/self/exe", &argv)
        let code = errno
        for pointer in argv { free(pointer) }
        for name in [variable, originVariable, userValueVariable] {
            if let value = environment[name] { setenv(name, value, 1) } else { unsetenv(name) }
        }
        return code
    }

    /// The core type to pin for this process, or nil (already pinned, asked not to, or a CPU without AVX2/FMA,
    /// where OpenBLAS's choice stands and a replay elsewhere reports the difference).
    public static func wanted(environment: [String: String] = ProcessInfo.processInfo.environment,
                              cpuFlags: () -> Set<String> = cpuFlags) -> String? {
        #if arch(x86_64)
        if environment[variable] != nil { return nil }
        let policy = environment[policyVariable] ?? ""
        if policy == "native" { return nil }
        let flags = cpuFlags()
        guard flags.contains("avx2"), flags.contains("fma") else { return nil }
        return policy.isEmpty ? portable : policy
        #else
        return nil
        #endif
    }

    /// Call first in `main`: when a core type should be pinned and is not, sets it and re-executes this
    /// program; returns only when nothing was to be done or the exec failed (then OpenBLAS's choice stands).
    public static func pinByReexecuting() {
        guard let type = wanted() else { return }
        setenv(variable, type, 1)
        setenv(originVariable, "policy", 1)
        let arguments = CommandLine.arguments
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        execv("/proc/self/exe", &argv)
        // Still here: the exec failed. Run as we are, unpinned, and record it so.
        unsetenv(variable)
        unsetenv(originVariable)
        for pointer in argv { free(pointer) }
    }

    /// The `flags` of the first processor in /proc/cpuinfo.
    public static func cpuFlags() -> Set<String> {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("flags") }),
              let colon = line.firstIndex(of: ":") else { return [] }
        return Set(line[line.index(after: colon)...].split(separator: " ").map(String.init))
    }
}
