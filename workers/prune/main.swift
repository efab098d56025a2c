import Foundation
import WorkerMain

// adapt-prune-worker: claims the pipeline's prune steps (see WorkerExecutable for options and signals).
exit(await WorkerExecutable.main(kind: "prune"))
