import Foundation

extension QuantizedMatVec {
    /// What `measurePasses` found for one tensor type on one compilation of the row kernels.
    public struct PassMeasurement: Sendable {
        public let type: String
        /// The name `quantized_kernels` records for that compilation (`int8-avx512vnni`, `int8-avx2`, …).
        public let kernels: String
        /// Bytes of that type's blocks a pass reads.
        public let bytes: Int
        public let cpuSeconds: Double
        public var bytesPerCPUSecond: Double { Double(bytes) / cpuSeconds }
    }

    /// Decode's products alone: every matrix of `file` the row kernels read, one after the other, times one
    /// vector, on the calling thread, for each compilation this CPU runs; per type, the best of `repeats` passes
    /// by thread CPU time (it moves far less than wall time on a shared machine). The compilations take turns
    /// pass by pass, so a change in the machine's load meets them all. A model larger than the caches is read
    /// from memory, as decode reads it.
    public static func measurePasses(_ file: GGUFFile, repeats: Int) -> [PassMeasurement] {
        let matrices = file.tensors.filter { $0.dimensions.count == 2 && supports($0.type) }
        let paths = Path.allCases.filter { path in
            switch path {
            case .avx512vnni: return hasVNNI
            case .avx2: return hasAVX2
            case .portable: return true
            }
        }
        let types = Array(Set(matrices.map(\.type.name))).sorted()
        var best = [Path: [String: Double]]()
        let x = [Float]((0..<(matrices.map { $0.dimensions[0] }.max() ?? 0)).map { Float(sin(Double($0) * 0.618)) })
        x.withUnsafeBufferPointer { xp in
            for _ in 0..<repeats {
                for path in paths {
                    var seconds = [String: Double]()
                    for info in matrices {
                        let (columns, rows) = (info.dimensions[0], info.dimensions[1])
                        var y = [Float](repeating: 0, count: rows)
                        let start = QuantizedMatMul.threadCPUSeconds()
                        multiply(info.type, blocks: file.bytes(of: info).baseAddress!, rows: rows, columns: columns, x: xp.baseAddress!,
                                 into: &y, workers: 1, path: path)
                        seconds[info.type.name, default: 0] += QuantizedMatMul.threadCPUSeconds() - start
                    }
                    best[path] = best[path, default: [:]].merging(seconds, uniquingKeysWith: min)
                }
            }
        }
        return paths.flatMap { path in
            types.map { type in
                PassMeasurement(type: type, kernels: name(of: path), bytes: matrices.filter { $0.type.name == type }.map(\.byteCount).reduce(0, +),
                                cpuSeconds: best[path]![type]!)
            }
        }
    }
}
