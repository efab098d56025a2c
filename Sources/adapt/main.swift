import CommandLineKit
import Foundation
import Model

BLAS.stopIdleThreads()

let tool = CommandLineTool(
    name: "adapt",
    summary: "Adapt: nightly on-device personalisation of a small language model, driven by a durable job queue.",
    globalOptions: GlobalOptions.specs,
    commands: AllCommands.list)

exit(await tool.main(Array(CommandLine.arguments.dropFirst())))
