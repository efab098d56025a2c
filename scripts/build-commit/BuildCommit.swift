import Foundation
import PackagePlugin

/// Records the git commit a build was made from in the `BuildInfo` module, before every build: a prebuild
/// command (not a build command) because its input, the repository's HEAD, is not a file SwiftPM can watch.
/// The work is done by scripts/build-commit.sh, which a test runs directly.
@main
struct BuildCommit: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let root = context.package.directoryURL
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("generated")
        return [.prebuildCommand(
            displayName: "Recording the git commit of \(target.name)",
            executable: URL(fileURLWithPath: "/bin/sh"),
            arguments: [root.appendingPathComponent("scripts/build-commit.sh").path, root.path, output.path],
            outputFilesDirectory: output)]
    }
}
