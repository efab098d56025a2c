import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension QuantizedMatMul {
    /// What `measure` found for one matrix: multiply-adds done and the calling thread's CPU seconds (best repeat).
    public struct Measurement: Sendable {
        public let tensor: String
        public let type: String
        public let rows: Int
        public let columns: Int
        public let tokens: Int
        public let multiplyAdds: Double
        public let cpuSeconds: Double
        public var multiplyAddsPerCPUSecond: Double { multiplyAdds / cpuSeconds }
    }

    /// The prompt kernels alone on `info` of `file` times `tokens` random activations, on the calling thread:
    /// the rounding of the activations, the repacking and the tile products, as a prompt pass runs them; the best
    /// of `repeats` by thread CPU time (it moves far less than wall time on a shared machine). Nil where the
    /// kernels do not run for that type.
    public static func measure(_ info: GGUFTensorInfo, in file: GGUFFile, tokens: Int, repeats: Int) -> Measurement? {
        guard info.dimensions.count == 2, supports(info.type) else { return nil }
        let (columns, rows) = (info.dimensions[0], info.dimensions[1])
        let x = (0..<(tokens * columns)).map { Float(sin(Double($0) * 0.618)) * ($0 % 37 == 0 ? 20 : 1) }
        var y = [Float](repeating: 0, count: tokens * rows)
        var best = Double.infinity
        x.withUnsafeBufferPointer { xp in
            y.withUnsafeMutableBufferPointer { yp in
                let product = QuantizedMatVec.Product(type: info.type, blocks: file.bytes(of: info).baseAddress!, rows: rows, y: yp.baseAddress!)
                for _ in 0..<repeats {
                    let start = threadCPUSeconds()
                    multiply([product], tokens: tokens, columns: columns, x: xp.baseAddress!, workers: 1)
                    best = min(best, threadCPUSeconds() - start)
                }
            }
        }
        return Measurement(tensor: info.name, type: info.type.name, rows: rows, columns: columns, tokens: tokens,
                           multiplyAdds: Double(rows * columns * tokens), cpuSeconds: best)
    }

    static func threadCPUSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
