import AdaptCore

/// What can go wrong in the replay buffer. Descriptions name values the user chose (a lineage, an option)
/// and the way out, never the text of an example.
public enum ReplayError: Error, Equatable, CustomStringConvertible {
    /// The lineage name breaks `Lineage.rule` (the rule `enqueue nightly` and `schedule` apply).
    case invalidLineage(String)
    /// A policy value is out of its range (`name` is the option, `allowed` says the range).
    case invalidPolicy(name: String, value: String, allowed: String)
    /// A `forget` request named nothing (neither an id nor a source).
    case nothingToForget
    /// Text that cannot be (the start of) an example id.
    case invalidExampleID(String)
    /// No stored example has an id starting with this.
    case noSuchExample(String)
    /// Several stored examples have ids starting with this; `matches` says how many.
    case ambiguousExampleID(String, matches: Int)
    /// A stored row no longer matches what this build expects (a hand-edited database).
    case corruptRow(table: String, column: String)
    /// An example in a snapshot was erased between the snapshot's read and its record; the snapshot is deleted.
    case erasedWhileSnapshotting(blob: String)
    /// An erasure could not be written for lack of space; it was rolled back whole.
    case noSpaceToErase(path: String)
    /// Nothing was ever stored for this lineage (no import, no policy).
    case unknownLineage(String)
    /// The lineage holds no example of this source.
    case unknownSource(String, lineage: String)

    public var description: String {
        switch self {
        case let .invalidLineage(name):
            return InvalidLineageName(name: name).description
        case let .invalidPolicy(name, value, allowed):
            return "\(name) \(value) is out of range; it must be \(allowed)"
        case .nothingToForget:
            return "nothing to forget; pass --id ID or --source SOURCE"
        case let .invalidExampleID(text):
            let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
            return "'\(shown)' is not an example id; pass an id, or at least its first 8 characters, as 'adapt data list' shows them"
        case let .noSuchExample(prefix):
            return "no stored example has an id starting with \(prefix); nothing was forgotten (see 'adapt data list')"
        case let .ambiguousExampleID(prefix, matches):
            return "\(matches) examples have ids starting with \(prefix); nothing was forgotten, pass more of the id (see 'adapt data list --json')"
        case let .erasedWhileSnapshotting(blob):
            return "an example in snapshot \(blob) was erased while the snapshot was being taken; the snapshot was deleted "
                + "and the step must run again (it is retried)"
        case let .noSpaceToErase(path):
            return "no space left to write \(path), so nothing was erased: the examples, the snapshots holding them and "
                + "the adapter versions are unchanged. Free some space on that file system (or raise the file-size limit "
                + "or quota) and run 'adapt data forget' again"
        case let .unknownLineage(name):
            return "no data or policy is stored for lineage \(name); nothing was changed (see 'adapt data stats')"
        case let .unknownSource(source, lineage):
            let shown = source.count > 64 ? String(source.prefix(64)) + "…" : source
            return "lineage \(lineage) holds no example of source '\(shown)'; nothing was changed "
                + "(the sources of a worse night are named in its eval step's 'attribution'; see 'adapt show JOB')"
        case let .corruptRow(table, column):
            return "a row of \(table) has an unexpected \(column); the database was edited by hand, restore it from a backup"
        }
    }
}

/// Lineage names are shown in tables, used as keys and, once a run is scheduled, in unit file names: the
/// replay buffer takes exactly the names the pipeline layer takes.
enum LineageName {
    static func validate(_ name: String) throws {
        guard Lineage.isValid(name) else { throw ReplayError.invalidLineage(name) }
    }
}
