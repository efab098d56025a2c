import BuildInfo
import CommandLineKit

/// The `adapt` program: its global options and command table, run by main.swift and described by
/// `adapt manual` and `adapt completion bash` (which must see the same table, so it is declared once, here).
enum AdaptTool {
    static let tool = CommandLineTool(
        name: "adapt",
        summary: "Adapt: nightly on-device personalisation of a small language model, driven by a durable job queue.",
        globalOptions: GlobalOptions.specs,
        commands: AllCommands.list,
        version: BuildInfo.description)
}
