import Foundation
import WorkerMain

// adapt-promote-worker: claims the pipeline's promote steps (see WorkerExecutable for options and signals).
exit(await WorkerExecutable.main(kind: "promote"))
