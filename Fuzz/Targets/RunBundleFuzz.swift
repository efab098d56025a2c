import Foundation
import Steps
import Training

/// Run bundles (`adapt replay --bundle`): `ADAPTRB1`, then one zstd frame of JSON; a decoded bundle's recorded
/// run is checked (every blob a step reads carried and hashing to its digest).
public enum RunBundleFuzz: FuzzTarget {
    public static let name = "run-bundle"

    public static func run(_ data: Data) {
        let (wrapped, rest) = FuzzInput.mode(data)
        // Wrapped: the input is the JSON document, compressed here so mutations reach the document's decoder.
        let file: Data
        if wrapped {
            guard let compressed = try? Zstd.compress(rest, level: 1) else { return }
            file = RunBundle.magic + compressed
        } else {
            file = rest
        }
        guard let bundle = try? RunBundle.decode(file, path: "fuzz.bundle") else { return }
        _ = try? bundle.recordedRun()
    }

    public static func seeds() throws -> [Data] {
        var seeds: [Data] = []
        for threads in [1, 2] {
            let file = try FuzzFixtures.data("pipelines/examples/logbook/bundles/night-1-threads-\(threads).bundle")
            seeds.append(Data([0]) + file)
            if threads == 1 { seeds.append(Data([1]) + (try Zstd.decompress(file.dropFirst(RunBundle.magic.count)))) }
        }
        return seeds
    }
}
