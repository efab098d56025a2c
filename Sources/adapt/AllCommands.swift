import CommandLineKit

/// Every `adapt` subcommand; each group lives in its own file under Commands/.
enum AllCommands {
    static let list: [Command] = []
        + GateCommands.all
        + RegistryCommands.all
        + GenerateCommand.all
        + ModelCommands.all
        + TokenizeCommands.all
        + TrainCommands.all
}
