// swift-tools-version:6.0
// The layout follows DESIGN.md: libraries under Sources/, one executable per step kind under workers/,
// one test target per library under Tests/. Lower modules never import higher ones.
import Foundation
import PackageDescription

/// The fuzz executables' names (Fuzz/Entries/<name>), added below when ADAPT_FUZZ=1.
let fuzzEntryNames = [
    "GGUF", "JSONL", "Pipeline", "RunDescription", "Adapter", "Checkpoint", "Tokenizer", "ChatTemplate", "Safetensors",
    "GGUFLoRA", "PEFT", "MLX", "RunBundle",
]

// QuantizedKernelsAVX2 is QuantizedKernels' files compiled for AVX2, FMA and F16C, plus files of Clang x86 intrinsics
// that only this compilation has (QUANTIZED_KERNELS_AVX2); FMA for the tile products' fused multiply-adds.
#if arch(x86_64)
let avx2Flags = ["-Xcc", "-mavx2", "-Xcc", "-mfma", "-Xcc", "-mf16c", "-DQUANTIZED_KERNELS_F16C", "-DQUANTIZED_KERNELS_AVX2"]
#else
let avx2Flags: [String] = []
#endif
// QuantizedKernelsAVX512 holds the prompt pass's tile kernels, which need AVX-512 with VNNI (vpdpbusd); elsewhere it
// compiles to nothing.
#if arch(x86_64)
let avx512Flags = ["-Xcc", "-mavx512f", "-Xcc", "-mavx512bw", "-Xcc", "-mavx512vl", "-Xcc", "-mavx512vnni", "-Xcc", "-mf16c",
                   "-DQUANTIZED_KERNELS_AVX512"]
#else
let avx512Flags: [String] = []
#endif

let package = Package(
    name: "Adapt",
    products: [
        .executable(name: "adapt", targets: ["adapt"]),
        .executable(name: "adapt-prune-worker", targets: ["PruneWorker"]),
        .executable(name: "adapt-sample-worker", targets: ["SampleWorker"]),
        .executable(name: "adapt-train-worker", targets: ["TrainWorker"]),
        .executable(name: "adapt-eval-worker", targets: ["EvalWorker"]),
        .executable(name: "adapt-promote-worker", targets: ["PromoteWorker"]),
        .executable(name: "adapt-model-bench", targets: ["ModelBench"]),
    ],
    targets: [
        // C libraries from Debian packages, each wrapped by exactly one Swift file.
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CBLAS", path: "Sources/CBLAS", providers: [.apt(["libopenblas-dev"])]),
        .systemLibrary(name: "CZstd", path: "Sources/CZstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CCrypto", path: "Sources/CCrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CPostgres", path: "Sources/CPostgres", providers: [.apt(["libpq-dev"])]),

        .target(name: "AdaptCore", dependencies: ["CCrypto"]),
        // The version and the git commit of the build (`adapt --version`); the commit is written before every build.
        .plugin(name: "BuildCommit", capability: .buildTool(), path: "scripts/build-commit"),
        .target(name: "BuildInfo", plugins: ["BuildCommit"]),
        .target(name: "Storage", dependencies: ["AdaptCore", "CSQLite", "CPostgres"]),
        // Parsing, help and error reporting for `adapt` and the workers: a leaf, it knows nothing of the engine.
        .target(name: "CommandLineKit"),
        // The state directory as every executable takes and opens it: `--state`/`--durability` and their
        // environment fallbacks, and opening the database the way a command or a worker needs it.
        .target(name: "CommandLineState", dependencies: ["AdaptCore", "Storage", "CommandLineKit"]),
        // The adapter file format and the LoRA settings it records: training writes it; inference, the steps and
        // the command line read it. Below the model (which applies the settings), so a module that only stores or
        // moves adapters links no BLAS.
        .target(name: "Adapters", dependencies: ["AdaptCore"]),
        // The numerical kernels are optimised in debug builds too: unoptimised SIMD and pointer loops are
        // many times slower (BENCHMARKS.md, code choices), which would make every real-model test take minutes.
        // The integer row kernels of single-token decoding, compiled twice from one file: for the baseline and
        // with AVX2 (x86-64 hosts only); Model picks one at run time from the CPU's flags.
        .target(name: "QuantizedKernels", swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),
        .target(name: "QuantizedKernelsAVX2", swiftSettings: [.unsafeFlags(avx2Flags + ["-O"], .when(configuration: .debug)),
                                                              .unsafeFlags(avx2Flags, .when(configuration: .release))]),
        .target(name: "QuantizedKernelsAVX512", swiftSettings: [.unsafeFlags(avx512Flags + ["-O"], .when(configuration: .debug)),
                                                                .unsafeFlags(avx512Flags, .when(configuration: .release))]),
        .target(name: "Model", dependencies: ["AdaptCore", "Adapters", "CBLAS", "QuantizedKernels", "QuantizedKernelsAVX2",
                                              "QuantizedKernelsAVX512"],
                swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),
        // Adapters in and out of other tools' formats (GGUF-LoRA, PEFT, mlx-lm): reads the base model's GGUF
        // through Model, so it sits above it; the format logic that needs no GGUF lives in Adapters.
        .target(name: "AdapterExchange", dependencies: ["AdaptCore", "Adapters", "Model", "Registry"]),
        .target(name: "Pipelines", dependencies: ["AdaptCore"]),
        .target(name: "ReplayBuffer", dependencies: ["AdaptCore", "Storage"]),
        // The job store: schema, migrations, the SQL of each table, and the contract a job body is written to.
        .target(name: "JobQueue", dependencies: ["AdaptCore", "Storage"]),
        // The worker loop over the store (claim, heartbeat, group commit, idle wait, signals) and the supervisor
        // that runs worker processes; no ML code, so the engine runs and is tested without it.
        .target(name: "WorkerRuntime", dependencies: ["AdaptCore", "Storage", "JobQueue"]),
        .target(name: "Evaluation", dependencies: ["AdaptCore"]),
        .target(name: "Registry", dependencies: ["AdaptCore", "Storage"]),
        // The only module that compresses (checkpoints), so the only one that links zstd.
        .target(name: "Training", dependencies: ["AdaptCore", "Adapters", "Model", "CZstd"]),
        // Reads adapter files through Adapters; knows nothing of training.
        .target(name: "Inference", dependencies: ["AdaptCore", "Adapters", "Model", "Registry"]),
        // The only module that sees both the job engine and the ML code: the five step bodies.
        .target(name: "Steps", dependencies: [
            "AdaptCore", "Storage", "JobQueue", "Pipelines", "ReplayBuffer", "Adapters", "Model", "Training", "Evaluation",
            "Registry", "AdapterExchange",
        ]),
        // The worker executables' shared main: the runtime's loop running the step bodies.
        .target(name: "WorkerMain", dependencies: [
            "AdaptCore", "Storage", "CommandLineKit", "CommandLineState", "JobQueue", "WorkerRuntime", "Steps",
        ]),

        // The HTML report and the data it is drawn from: value types and rendering only, so the page can be tested
        // without a database; Services gathers the data from the job history and the registry.
        .target(name: "Report", dependencies: ["AdaptCore"]),

        // What the commands do, one function per command, over the modules above: a command parses, calls
        // its service and prints what comes back.
        .target(name: "Services", dependencies: [
            "AdaptCore", "Storage", "Model", "Pipelines", "ReplayBuffer", "JobQueue", "WorkerRuntime",
            "Evaluation", "Registry", "Adapters", "Training", "Inference", "Steps", "AdapterExchange", "Report",
        ]),

        // Parses, calls Services, prints: the value types it prints come through Services (Vocabulary.swift).
        .executableTarget(name: "adapt", dependencies: ["AdaptCore", "CommandLineKit", "CommandLineState", "Services", "BuildInfo"]),
        .executableTarget(name: "PruneWorker", dependencies: ["WorkerMain"], path: "workers/prune"),
        .executableTarget(name: "SampleWorker", dependencies: ["WorkerMain"], path: "workers/sample"),
        .executableTarget(name: "TrainWorker", dependencies: ["WorkerMain"], path: "workers/train"),
        .executableTarget(name: "EvalWorker", dependencies: ["WorkerMain"], path: "workers/eval"),
        .executableTarget(name: "PromoteWorker", dependencies: ["WorkerMain"], path: "workers/promote"),
        // A measuring tool, not a user command: scripts/bench/model runs it beside llama.cpp.
        .executableTarget(name: "ModelBench", dependencies: ["AdaptCore", "CommandLineKit", "CommandLineState", "Model"],
                          path: "scripts/bench/model-bench"),

        // The readers under fuzzing, one target each (docs/fuzzing.md): libFuzzer drives them in the fuzz build, and
        // FuzzTargetsTests runs them over the committed corpora in every test run.
        .target(name: "FuzzTargets", dependencies: [
            "AdaptCore", "Model", "Adapters", "AdapterExchange", "Pipelines", "ReplayBuffer", "JobQueue", "Training", "Steps",
        ], path: "Fuzz/Targets"),

        .target(name: "TestSupport", dependencies: ["AdaptCore", "Storage"], path: "Tests/TestSupport"),
        .testTarget(name: "AdaptCoreTests", dependencies: ["AdaptCore", "TestSupport"]),
        .testTarget(name: "StorageTests", dependencies: ["Storage", "TestSupport"]),
        .testTarget(name: "CommandLineKitTests", dependencies: ["CommandLineKit", "AdaptCore", "TestSupport"]),
        .testTarget(name: "CommandLineStateTests", dependencies: ["CommandLineState", "CommandLineKit", "AdaptCore", "Storage", "TestSupport"]),
        .testTarget(name: "PipelinesTests", dependencies: ["Pipelines", "TestSupport"]),
        .testTarget(name: "ReplayBufferTests", dependencies: ["ReplayBuffer", "TestSupport"],
                    exclude: ["Fixtures"]),
        // Link only the job store or the worker runtime (and test support): proof that neither needs ML code.
        .testTarget(name: "JobQueueTests", dependencies: ["JobQueue", "TestSupport"]),
        .testTarget(name: "WorkerRuntimeTests", dependencies: ["WorkerRuntime", "JobQueue", "Storage", "AdaptCore", "TestSupport"]),
        .testTarget(name: "EvaluationTests", dependencies: ["Evaluation", "AdaptCore", "TestSupport"],
                    exclude: ["Fixtures"]),
        // Adapters only to write real adapter files: `adapt registry add` refuses anything else.
        .testTarget(name: "RegistryTests", dependencies: ["Registry", "Storage", "AdaptCore", "Adapters", "JobQueue", "TestSupport"]),
        .testTarget(name: "AdaptersTests", dependencies: ["Adapters", "AdaptCore", "TestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "AdapterExchangeTests", dependencies: ["AdapterExchange", "Adapters", "AdaptCore", "Model", "TestSupport"],
                    exclude: ["Fixtures"]),
        .testTarget(name: "ModelTests", dependencies: ["Model", "Adapters", "AdaptCore", "TestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "StepsTests", dependencies: [
            "Steps", "JobQueue", "Storage", "AdaptCore", "Pipelines", "Adapters", "Training", "TestSupport",
        ]),
        .testTarget(name: "TrainingTests", dependencies: ["Training", "Adapters", "Model", "TestSupport"], exclude: ["Reference"]),
        // Renders reports of real runs (made by the built executables) in headless Chromium.
        .testTarget(name: "ReportTests", dependencies: ["Report", "AdaptCore", "Storage", "TestSupport"]),
        .testTarget(name: "FuzzTargetsTests", dependencies: ["FuzzTargets", "TestSupport"]),
        // What the commands do, checked through the built `adapt` (doctor on broken setups).
        .testTarget(name: "ServicesTests", dependencies: ["AdaptCore", "Services", "TestSupport"]),
        // `adapt migrate` on states built with the libraries, through the service and the built `adapt`.
        .testTarget(name: "StateMigrationTests", dependencies: [
            "Services", "JobQueue", "Registry", "ReplayBuffer", "Storage", "AdaptCore", "TestSupport",
        ]),
        .testTarget(name: "InferenceTests", dependencies: ["Inference", "Adapters", "Model", "Training", "Registry", "Storage",
                                                           "TestSupport"],
                    exclude: ["Fixtures"]),
    ]
)

// The libFuzzer executables, one per reader: they link libFuzzer's driver, so they exist only in the fuzz build
// (scripts/fuzz sets ADAPT_FUZZ and builds with -sanitize=fuzzer into its own scratch path) and the normal build
// and its products are untouched.
if ProcessInfo.processInfo.environment["ADAPT_FUZZ"] == "1" {
    // libFuzzer's driver, declared for the executables' mains (the fuzzer runtime is linked by -sanitize=fuzzer).
    package.targets.append(.systemLibrary(name: "CLibFuzzer", path: "Fuzz/CLibFuzzer"))
    for name in fuzzEntryNames {
        package.products.append(.executable(name: "Fuzz\(name)", targets: ["Fuzz\(name)"]))
        package.targets.append(.executableTarget(name: "Fuzz\(name)", dependencies: ["FuzzTargets", "CLibFuzzer"],
                                                 path: "Fuzz/Entries/\(name)"))
    }
}
