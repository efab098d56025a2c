import CommandLineKit

/// Every `adapt` subcommand; each group lives in its own file under Commands/.
enum AllCommands {
    static let list: [Command] = []
        + PipelineCommands.all + ScheduleCommands.all + DeviceCommands.all
        + DataCommands.all
        + JobCommands.all + NightlyCommands.all
        + GateCommands.all
        + RegistryCommands.all
        + ModelCommands.all
        + TokenizeCommands.all
        + TrainCommands.all
}
