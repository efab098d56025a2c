import Foundation
import WorkerMain

// adapt-eval-worker: claims the pipeline's eval steps (see WorkerExecutable for options and signals).
exit(await WorkerExecutable.main(kind: "eval"))
