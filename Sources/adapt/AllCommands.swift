import CommandLineKit

/// Every `adapt` subcommand; each group lives in its own file under Commands/.
enum AllCommands {
    static let list: [Command] = []
        + JobCommands.all + NightlyCommands.all + ReportCommand.all + BundleCommands.all + GCCommand.all
        + PipelineCommands.all + ScheduleCommands.all + DeviceCommands.all
        + DataCommands.all
        + TrainCommands.all
        + GateCommands.all
        + EvalCommands.all
        + RegistryCommands.all + RegistryPruneCommand.all
        + GenerateCommand.all
        + ModelCommands.all
        + TokenizeCommands.all
        + DoctorCommand.all
        + MigrateCommand.all
        + DocumentationCommands.all
}
