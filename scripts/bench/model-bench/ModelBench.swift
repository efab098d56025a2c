import AdaptCore
import CommandLineKit
import CommandLineState
import Foundation
import Model
import Synchronization

/// `adapt-model-bench`: model load time, prompt processing, single-token decode and, on request, one LoRA
/// training pass. A measuring tool for scripts/bench/model and BENCHMARKS.md, kept out of `adapt`'s commands.
enum ModelBench {
    static let model = Option<String?>("model", value: "FILE",
                                       help: "GGUF model (default: models/\(DefaultModel.fileName) in the state directory)")
    static let threads = Option<Int?>("threads", in: 1...BLAS.maximumThreads,
                                      help: "OpenBLAS threads, 1 to 256 (default: OpenBLAS's own choice)")
    static let promptTokens = Option("prompt-tokens", default: 256, in: 1...100_000, help: "prompt length")
    static let decodeTokens = Option("decode-tokens", default: 64, in: 1...100_000, help: "tokens to decode")
    static let repeatCount = Option("repeat", default: 3, in: 1...100, help: "repetitions; the fastest counts")
    static let baseWeights = Option(
        "base-weights", value: "quantized|f32", default: BaseWeightStorage.quantized, defaultHelp: "quantized",
        help: "batched passes on the base kept in its file's types or on an f32 copy made at load"
    ) { text in
        guard let storage = BaseWeightStorage(rawValue: text) else { throw UsageError("must be quantized or f32, got '\(text)'") }
        return storage
    }
    static let f32Decode = Flag("f32-decode", help: "decode from the f32 weights (sgemv) instead of the quantized blocks")
    static let trainTokenCount = Option<Int?>(
        "train-tokens", value: "N", default: nil, help: "also time one LoRA loss-and-gradients pass (rank 8, q/k/v/o) over N tokens"
    ) { text in
        let count = try OptionParsing.integer(text)
        guard count >= 2 else { throw UsageError("must be at least 2, got \(count)") }
        return count
    }
    static let trainDropout = Option("train-dropout", value: "P", default: 0.05, defaultHelp: "0.05", help: "LoRA dropout of the timed training pass") { text in
        let dropout = try OptionParsing.number(text)
        guard dropout >= 0, dropout < 1 else { throw UsageError("must be in [0, 1), got \(dropout)") }
        return dropout
    }

    static let decodeKernels = Flag(
        "decode-kernels",
        help: "only time the decode kernels alone: every block matrix once per pass, one thread, each kernel build this CPU runs")
    static let promptKernelTypes = Option<[String]?>(
        "prompt-kernel-types", value: "TYPE,…", default: nil,
        help: "only time the prompt kernels alone on the largest matrix of each type (e.g. Q4_K,Q5_0) × --prompt-tokens tokens"
    ) { text in text.split(separator: ",").map(String.init) }

    static let options: [any OptionDeclaration] = [
        model, threads, promptTokens, decodeTokens, repeatCount, baseWeights, f32Decode, trainTokenCount, trainDropout,
        promptKernelTypes, decodeKernels, .json,
    ]

    static let tool = CommandLineTool(
        name: "adapt-model-bench",
        summary: "Measures model load time, prompt processing and single-token decode speed.",
        // A tool of one command takes its options before any word, where the parser looks for global ones.
        globalOptions: [StateOptions.state.spec] + options.map(\.spec),
        commands: [Command("", summary: "measure model load time, prompt processing and single-token decode speed",
                           discussion: """
                       Feeds a fixed prompt of --prompt-tokens ids in one batch, then decodes --decode-tokens tokens one at a \
                       time (greedy) on the KV cache, --repeat times; reports the best of the repeats.
                       --json prints {"threads", "load_ms", "prompt_tokens", "prompt_tokens_per_second", "decode_tokens", \
                       "decode_tokens_per_second", "weight_bytes", "peak_rss_bytes", "decode_bytes_per_token" (the weights a \
                       decoded token reads), "quantized_kernels" (the decode kernels picked for this CPU), "prompt_kernels" (the \
                       prompt pass's: int8-v1 or sgemm), "base_weights", \
                       "read_bytes_per_second" (the best rate --threads threads read a 512 MB buffer)}; with --train-tokens also "train_tokens", \
                       "train_tokens_per_second" (fastest repeat, wall clock), "train_cpu_seconds" (the process's CPU time of \
                       each repeat, all BLAS threads included: on a shared machine it moves far less than wall time) and \
                       "train_dropout". With --decode-kernels it prints an array of {"type", "kernels", "bytes", "cpu_seconds"} instead: \
                       per tensor type and kernel build, the best of --repeat passes over the file's block matrices.
                       """,
                           run: { invocation in try run(invocation.global) })])

    static func run(_ arguments: ParsedArguments) throws {
        let promptCount = try arguments[promptTokens]
        let decodeCount = try arguments[decodeTokens]
        let repeats = try arguments[repeatCount]
        let trainTokens = try arguments[trainTokenCount]
        let dropout = try arguments[trainDropout]
        // The lengths are checked against the context before the weights are dequantized: a pass's attention
        // scores grow with the square of its length, so an unbounded one ends in a failed allocation.
        if let threads = try arguments[threads] { try BLAS.setThreads(threads) }
        let file = try GGUFFile(url: try modelURL(arguments))
        if arguments[decodeKernels] {
            measureDecodeKernels(file, repeats: repeats, json: arguments[.json])
            return
        }
        if let types = try arguments[promptKernelTypes] {
            try measurePromptKernels(file, types: types, tokens: promptCount, repeats: repeats, json: arguments[.json])
            return
        }
        let context = try LlamaModel.Hyperparameters(file: file).contextLength
        guard promptCount + decodeCount <= context else {
            throw UsageError("--prompt-tokens \(promptCount) and --decode-tokens \(decodeCount) fill \(promptCount + decodeCount) "
                             + "positions but the model's context holds \(context); lower them")
        }
        if let trainTokens, trainTokens > context {
            throw UsageError("--train-tokens is \(trainTokens) but the model's context holds \(context); lower it")
        }
        let start = DispatchTime.now().uptimeNanoseconds
        let storage = try arguments[baseWeights]
        let model = try LlamaModel(file: file, quantizedDecode: !arguments[f32Decode], base: storage)
        let loadMS = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        let V = model.hyperparameters.vocabularySize
        let prompt = (0..<promptCount).map { ($0 * 7919 + 13) % V }
        var bestPrompt = Double.infinity, bestDecode = Double.infinity
        for _ in 0..<repeats {
            var cache = KVCache()
            let t0 = DispatchTime.now().uptimeNanoseconds
            var logits = model.forward(tokens: prompt, cache: &cache, quantizedPrompt: true)
            let t1 = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<decodeCount {
                let next = LlamaModel.top(1, of: logits)[0].id
                logits = model.forward(tokens: [next], cache: &cache)
            }
            let t2 = DispatchTime.now().uptimeNanoseconds
            bestPrompt = min(bestPrompt, Double(t1 - t0) / 1e9)
            bestDecode = min(bestDecode, Double(t2 - t1) / 1e9)
        }
        var result: [String: JSONValue] = [
            "base_weights": .string(storage.rawValue),
            "threads": .int(BLAS.threads),
            "load_ms": .double(loadMS),
            "prompt_tokens": .int(promptCount),
            "prompt_tokens_per_second": .double(Double(promptCount) / bestPrompt),
            "decode_tokens": .int(decodeCount),
            "decode_tokens_per_second": .double(Double(decodeCount) / bestDecode),
            "weight_bytes": .int(model.weightBytes),
            "peak_rss_bytes": .int(peakResidentBytes()),
            "decode_bytes_per_token": .int(decodeBytesPerToken(file)),
            "quantized_kernels": .string(BLASArithmetic.current(threads: BLAS.threads).quantizedKernels ?? "none"),
            "prompt_kernels": .string(BLASArithmetic.current(threads: BLAS.threads).promptKernels ?? "none"),
            "read_bytes_per_second": .double(readBandwidth(threads: BLAS.threads)),
        ]
        if let trainTokens {
            let tokens = (0..<trainTokens).map { ($0 * 7919 + 13) % V }
            let sequence = TrainingSequence(tokens: tokens, weights: [Float](repeating: 1, count: trainTokens - 1))
            let lora = LoRAParameters.initialized(for: model, config: LoRAConfig(rank: 8, alpha: 16, dropout: Float(dropout)), seed: 1)
            var best = Double.infinity
            var cpuSeconds: [Double] = []
            for step in 0..<repeats {
                let t0 = DispatchTime.now().uptimeNanoseconds
                let c0 = processCPUSeconds()
                _ = try model.lossAndGradients([sequence], lora: lora, dropoutSeed: 1, step: UInt64(step))
                cpuSeconds.append(processCPUSeconds() - c0)
                best = min(best, Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9)
            }
            result["train_tokens"] = .int(trainTokens)
            result["train_tokens_per_second"] = .double(Double(trainTokens) / best)
            result["train_cpu_seconds"] = .array(cpuSeconds.map { .double($0) })
            result["train_dropout"] = .double(dropout)
            result["peak_rss_bytes"] = .int(peakResidentBytes())
            if !arguments[.json] {
                let cpu = cpuSeconds.map { String(format: "%.3f", $0) }.joined(separator: ", ")
                Console.print(String(format: "train: %.1f tokens/s (%d tokens, rank 8, q/k/v/o, dropout %g), ", Double(trainTokens) / best, trainTokens, dropout)
                              + "CPU s per pass \(cpu), " + String(format: "peak RSS %.0f MB", Double(peakResidentBytes()) / 1e6))
            }
        }
        if arguments[.json] {
            Console.print(JSON.canonicalString(JSONValue.object(result)))
        } else {
            Console.print(String(format: "threads %d, load %.0f ms, prompt %.1f tokens/s (%d tokens), decode %.1f tokens/s, peak RSS %.0f MB",
                                 BLAS.threads, loadMS, Double(promptCount) / bestPrompt, promptCount,
                                 Double(decodeCount) / bestDecode, Double(peakResidentBytes()) / 1e6))
        }
    }

    /// The prompt kernels alone (`QuantizedMatMul.measure`) on the largest block matrix of each of `types`.
    static func measurePromptKernels(_ file: GGUFFile, types: [String], tokens: Int, repeats: Int, json: Bool) throws {
        var rows: [JSONValue] = []
        for name in types {
            let candidates = file.tensors.filter { $0.name.hasPrefix("blk.") && $0.type.name == name && $0.dimensions.count == 2 }
            // The largest (the first of those), where the kernels run longest per call.
            guard let info = candidates.first(where: { $0.elementCount == candidates.map(\.elementCount).max() }) else {
                throw UsageError("the model has no block matrix of type \(name)")
            }
            guard let m = QuantizedMatMul.measure(info, in: file, tokens: tokens, repeats: repeats) else {
                throw UsageError("the prompt kernels do not run for \(name) on this machine")
            }
            rows.append(.object(["tensor": .string(m.tensor), "type": .string(m.type), "rows": .int(m.rows), "columns": .int(m.columns),
                                 "tokens": .int(m.tokens), "cpu_seconds": .double(m.cpuSeconds),
                                 "gmac_per_cpu_second": .double(m.multiplyAddsPerCPUSecond / 1e9)]))
            if !json {
                Console.print(String(format: "%@ %@ (%d × %d) × %d tokens: %.1f G multiply-adds per CPU second", m.tensor, m.type, m.rows,
                                     m.columns, m.tokens, m.multiplyAddsPerCPUSecond / 1e9))
            }
        }
        if json { Console.print(JSON.canonicalString(JSONValue.array(rows))) }
    }

    /// The decode kernels alone (`QuantizedMatVec.measurePasses`): CPU time and read rate per type and kernel build.
    static func measureDecodeKernels(_ file: GGUFFile, repeats: Int, json: Bool) {
        let measurements = QuantizedMatVec.measurePasses(file, repeats: repeats)
        if json {
            Console.print(JSON.canonicalString(JSONValue.array(measurements.map { m in
                .object(["type": .string(m.type), "kernels": .string(m.kernels), "bytes": .int(m.bytes), "cpu_seconds": .double(m.cpuSeconds)])
            })))
            return
        }
        for kernels in Array(Set(measurements.map(\.kernels))).sorted() {
            let rows = measurements.filter { $0.kernels == kernels }
            for m in rows {
                Console.print(String(format: "%@ %@: %.3f ms a pass, %.1f GB per CPU second", kernels, m.type, m.cpuSeconds * 1e3,
                                     m.bytesPerCPUSecond / 1e9))
            }
            Console.print(String(format: "%@ all: %.3f ms a pass", kernels, rows.map(\.cpuSeconds).reduce(0, +) * 1e3))
        }
    }

    /// Bytes a decoded token reads from the weights: every matrix, except the token embedding when the file has
    /// a separate output matrix (then only one of its rows is read).
    static func decodeBytesPerToken(_ file: GGUFFile) -> Int {
        let untied = file.tensor(named: "output.weight") != nil
        return file.tensors.filter { $0.dimensions.count == 2 && !(untied && $0.name == "token_embd.weight") }
            .map(\.byteCount).reduce(0, +)
    }

    /// The best rate at which `threads` threads read a 512 MB buffer (each its own contiguous share, summing
    /// 64-bit words in four independent chains): the ceiling a decode that reads its weights once can reach.
    static func readBandwidth(threads: Int) -> Double {
        let words = 64 << 20
        let buffer = UnsafeMutablePointer<UInt64>.allocate(capacity: words)
        defer { buffer.deallocate() }
        for i in stride(from: 0, to: words, by: 512) { buffer[i] = UInt64(i) }   // fault every page in
        let shared = Shared(address: UInt(bitPattern: buffer))
        var best = Double.infinity
        for _ in 0..<5 {
            let t0 = DispatchTime.now().uptimeNanoseconds
            let sink = Sum()
            DispatchQueue.concurrentPerform(iterations: threads) { t in
                let base = UnsafePointer<SIMD2<UInt64>>(bitPattern: shared.address)!
                let lanes = words / 2, lower = lanes * t / threads, upper = lanes * (t + 1) / threads
                var a = SIMD2<UInt64>(), b = a, c = a, d = a
                var i = lower
                while i + 4 <= upper {
                    a &+= base[i]; b &+= base[i + 1]; c &+= base[i + 2]; d &+= base[i + 3]
                    i += 4
                }
                sink.add((a &+ b &+ c &+ d).wrappedSum())
            }
            best = min(best, Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9)
            if sink.value.load(ordering: .relaxed) == 42 { print("") }   // keeps the sums alive
        }
        return Double(words * 8) / best
    }

    /// The buffer's address: read-only while the threads run, and freed only after they all return.
    struct Shared: Sendable {
        let address: UInt
    }

    final class Sum: Sendable {
        let value = Atomic<UInt64>(0)
        func add(_ x: UInt64) { value.wrappingAdd(x, ordering: .relaxed) }
    }

    /// CPU seconds the whole process has used (every thread, OpenBLAS's included).
    static func processCPUSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// The process's peak resident set (VmHWM in /proc/self/status), 0 where unavailable.
    static func peakResidentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let kb = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
            return kb * 1024
        }
        return 0
    }

    /// --model, else the default model in the state directory (--state, ADAPT_STATE, ./state).
    static func modelURL(_ arguments: ParsedArguments) throws -> URL {
        let url = try arguments[model].map { URL(fileURLWithPath: $0) } ?? StateOptions.stateDirectory(arguments).defaultModel
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw ModelError.fileUnreadable(path: url.path, reason: "no such file")
        }
        return url
    }
}
