import AdaptCore
import CommandLineKit

extension Lineage {
    /// The lineage named on the command line: a name that breaks the rule is a usage error (exit 2) naming the
    /// option, the rule and the way out, before anything is opened or stored.
    static func option(_ text: String, name: String = "lineage") throws -> Lineage {
        do { return try Lineage(validating: text) } catch { throw UsageError("--\(name): \(error.description)") }
    }
}

extension Option where Value == Lineage? {
    /// `--lineage L`, checked by `Lineage.rule` as it is read.
    init(lineage help: String) {
        self.init("lineage", value: "L", default: nil, help: help) { try Lineage(validating: $0) }
    }
}
