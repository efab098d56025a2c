/// The version of this build and the commit it was built from.
///
/// `version` is the one place the version is written: `adapt --version` prints it, and `scripts/package` names
/// the Debian package after what the built `adapt --version` says. `buildCommit` is generated before every
/// build by the BuildCommit plugin (scripts/build-commit.sh).
public enum BuildInfo {
    public static let version = "0.1.0"

    /// The full git commit, with `-dirty` when the tree had uncommitted changes; `unknown` for a build outside a
    /// git checkout (a source tarball).
    public static let commit = buildCommit

    /// What `--version` prints.
    public static var description: String {
        "adapt \(version)\ncommit \(commit == "unknown" ? "unknown (built outside a git checkout)" : commit)"
    }
}
