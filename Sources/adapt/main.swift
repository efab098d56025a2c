import CommandLineKit
import Foundation
import Services

// Before anything else: pins OpenBLAS's kernels for bit-identical runs across x86-64 machines (may re-execute).
CommandProcess.prepare()
// A file-size limit (ulimit -f) reached while writing then fails the write with EFBIG, which the database
// layer reports as "no space" and rolls back, instead of killing the process in the middle of a write.
signal(SIGXFSZ, SIG_IGN)

exit(await AdaptTool.tool.main(Array(CommandLine.arguments.dropFirst())))
