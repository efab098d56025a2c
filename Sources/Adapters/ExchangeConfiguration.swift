import AdaptCore
import Foundation

/// The JSON configuration file beside exchanged adapter weights (PEFT's and mlx-lm's `adapter_config.json`).
enum ExchangeConfiguration {
    /// The object `data` holds, or `badConfiguration` naming `file` when it is not one JSON object (a duplicated
    /// key counts as not one: two readers could disagree on its value).
    static func object(_ data: Data, file: String) throws(AdapterExchangeError) -> JSONValue {
        guard JSONDuplicateKeys.first(in: data) == nil, let json = try? JSONDecoder().decode(JSONValue.self, from: data),
              json.objectValue != nil else {
            throw .badConfiguration(file: file, field: "the file", reason: "is not a JSON object")
        }
        return json
    }
}
