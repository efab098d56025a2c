/// The one rule for names that end up in file names, systemd unit names, cron lines and unique keys
/// (lineages, pipeline and step names): 1–64 ASCII letters, digits, `-` or `_`, starting with a letter or digit.
///
/// It lives here so the replay buffer (which may not import Pipelines) and the pipeline layer refuse exactly
/// the same names: a lineage `data import` accepts must be one `enqueue nightly` and `schedule` accept.
public enum SafeNameRule {
    public static let maximumLength = 64

    public static func isValid(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.unicodeScalars.count <= maximumLength else { return false }
        func allowed(_ c: Unicode.Scalar) -> Bool {
            ("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c) || c == "-" || c == "_"
        }
        return allowed(first) && first != "-" && first != "_" && name.unicodeScalars.allSatisfy(allowed)
    }
}
