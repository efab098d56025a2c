import AdaptCore
import CommandLineKit
import Foundation
import Model

/// `adapt model …`: model files.
enum ModelCommands {
    static let all: [Command] = [tiny]

    static let tiny = Command(
        "model tiny",
        summary: "write a tiny random-weight llama GGUF (2 blocks, width 64) for tests and CI",
        options: [
            OptionSpec("out", value: "FILE", help: "where to write the .gguf file"),
            OptionSpec("seed", value: "S", help: "weight seed (default 0)"),
        ]
    ) { invocation in
        let out = URL(fileURLWithPath: try invocation.arguments.required("out"))
        let seedText = invocation.arguments.string("seed") ?? "0"
        guard let seed = UInt64(seedText) else { throw UsageError("--seed expects a non-negative integer, got '\(seedText)'") }
        try TinyModel(seed: seed).write(to: out)
        Console.error("wrote \(out.path)")
    }
}
