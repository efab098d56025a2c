import CommandLineKit
import Foundation
import Model

BLAS.stopIdleThreads()
exit(await ModelBench.tool.main(Array(CommandLine.arguments.dropFirst())))
