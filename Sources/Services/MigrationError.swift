/// Why `adapt migrate` copied nothing. In every case the target is left as it was.
public enum MigrationError: Error, CustomStringConvertible, Equatable {
    case sameKindOfEndpoint(from: String, to: String)
    case noSourceState(path: String)
    case targetNotEmpty(target: String, holds: [String])
    case sourceSchemaNotCurrent(source: String, component: String, found: Int, known: Int)
    case unknownTables(side: String, tables: [String])
    case digestMismatch(component: String, table: String, sourceRows: Int, targetRows: Int)
    case targetBusy(target: String, lock: String)

    public var description: String {
        switch self {
        case let .sameKindOfEndpoint(from, to):
            return "cannot migrate from \(from) to \(to): one side must be a state directory and the other a postgres:// URL"
        case let .noSourceState(path):
            return "\(path) holds no adapt state; name the state directory or the database to copy with --from"
        case let .targetNotEmpty(target, holds):
            return "\(target) already holds adapt data (\(holds.joined(separator: ", "))); migrate only into a new "
                + "database or a new or empty state directory; nothing was written"
        case let .sourceSchemaNotCurrent(source, component, found, known) where found > known:
            return "\(source) was written by a newer adapt (\(component) schema version \(found), this build knows \(known)); "
                + "run migrate with that newer adapt"
        case let .sourceSchemaNotCurrent(source, component, found, known):
            return "\(source) has \(component) at schema version \(found), this build writes \(known); run any adapt "
                + "command that writes on it first (e.g. 'adapt runs' and 'adapt data list' on a state), then migrate again"
        case let .unknownTables(side, tables):
            return "\(side) has tables this migrate does not know how to copy (\(tables.joined(separator: ", "))); "
                + "nothing was written"
        case let .digestMismatch(component, table, sourceRows, targetRows):
            return "the copy of \(component) table \(table) differs from its source (\(sourceRows) rows read, "
                + "\(targetRows) found after writing); the target was rolled back and holds nothing of it"
        case let .targetBusy(target, lock):
            return "another adapt migrate is copying into \(target) (it holds \(lock)); wait for it to end; nothing was written"
        }
    }
}
