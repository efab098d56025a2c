import Foundation
import Model
import TestSupport

/// The tiny model's GGUF (seed 3), written once per test process, for tests that need a model file on disk.
enum TinyModelFile {
    private static let folder = TemporaryDirectory("tiny-model")
    static let url: URL = {
        let url = folder.file("tiny.gguf")
        try! TinyModel(seed: 3).write(to: url)
        return url
    }()
}
