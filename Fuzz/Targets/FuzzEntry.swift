import Foundation

/// What each fuzz executable's `LLVMFuzzerTestOneInput` and `LLVMFuzzerInitialize` call.
public enum FuzzEntry {
    public static func testOneInput(_ target: any FuzzTarget.Type, _ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
        let data = bytes.map { Data(bytes: $0, count: count) } ?? Data()
        target.run(data)
        return 0
    }

    /// With `ADAPT_FUZZ_WRITE_SEEDS=<directory>` in the environment, writes the target's seeds there as
    /// `seed-NNN` and exits: `scripts/fuzz --seeds` regenerates the committed corpora this way.
    public static func initialize(_ target: any FuzzTarget.Type) -> Int32 {
        guard let directory = ProcessInfo.processInfo.environment["ADAPT_FUZZ_WRITE_SEEDS"] else { return 0 }
        do {
            let url = URL(fileURLWithPath: directory)
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            for (i, seed) in try target.seeds().enumerated() {
                try seed.write(to: url.appendingPathComponent(String(format: "seed-%03d", i)))
            }
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("fuzz \(target.name): cannot write seeds: \(error)\n".utf8))
            exit(1)
        }
    }
}
