import Foundation
import WorkerMain

// adapt-sample-worker: claims the pipeline's sample steps (see WorkerExecutable for options and signals).
exit(await WorkerExecutable.main(kind: "sample"))
