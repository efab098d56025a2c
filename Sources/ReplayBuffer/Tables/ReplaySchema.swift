import Storage

/// The replay buffer's tables, migrated as the `replay` component (Storage's `Schema`).
///
/// Each migration is assembled from the table files (`LineageTable`, `ExampleTable`, `UseTable`,
/// `ImportTable`), so a table's SQL stays in one place. Never edit a shipped migration; append one.
public enum ReplaySchema {
    public static let schema = Schema(component: "replay", migrations: [
        LineageTable.create + ExampleTable.create + UseTable.create + ImportTable.create,
        BlobContentsTable.create,
        ExampleTable.addTurns,
        ExampleTable.addQuarantine,
    ])
}
