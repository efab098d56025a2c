// Tokenizer throughput: compiled by scripts/bench/tokenizer together with the tokenizer's sources.
// Usage: tokenizer-bench MODEL TEXT_FILE [REFERENCE_IDS_JSON]
// Prints one JSON line: bytes, tokens, best seconds of the repeats, tokens/s, MB/s, load ms, and whether
// the ids equal the reference (llama.cpp's) when one is given.
import Foundation

let arguments = CommandLine.arguments
let modelURL = URL(fileURLWithPath: arguments[1])
let text = try String(contentsOfFile: arguments[2], encoding: .utf8)
let clock = ContinuousClock()
func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18 }

var tokenizer: Tokenizer!
let load = try clock.measure { tokenizer = try Tokenizer(gguf: try GGUFFile(url: modelURL)) }
var ids: [Int] = []
var best = Double.infinity
for _ in 0..<5 {
    best = min(best, seconds(clock.measure { ids = tokenizer.encode(text) }))
}
var result: [String: Any] = [
    "bytes": text.utf8.count, "tokens": ids.count, "seconds": best,
    "tokens_per_second": Double(ids.count) / best, "megabytes_per_second": Double(text.utf8.count) / best / 1e6,
    "load_ms": seconds(load) * 1000,
]
if arguments.count > 3, let data = FileManager.default.contents(atPath: arguments[3]),
   let reference = try JSONSerialization.jsonObject(with: data) as? [Int] {
    result["equal_to_reference"] = reference == ids
}
print(String(decoding: try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys]), as: UTF8.self))
