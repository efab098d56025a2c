import Foundation
import WorkerMain

// adapt-train-worker: claims the pipeline's train steps (see WorkerExecutable for options and signals).
exit(await WorkerExecutable.main(kind: "train"))
