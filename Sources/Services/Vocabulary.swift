// The value types the command line parses into, passes to a service and prints, re-exported one by one so that
// `adapt` imports Services alone: each is data (records, identifiers, reports, options), and the classes and
// functions that open stores, run models or touch files stay behind the services. A type is listed only when the
// command line writes its name; a value it only passes on or reads members of needs no line here.

// The state database as an opaque handle: the command line opens it read-only or writing (StateAccess), as the
// command needs, and hands it to the service.
@_exported import class Storage.Database

// The job table's identifiers and records.
@_exported import struct JobQueue.RunID
@_exported import struct JobQueue.JobID
@_exported import enum JobQueue.Identifier
@_exported import enum JobQueue.JobState
@_exported import struct JobQueue.RunRecord
@_exported import struct JobQueue.JobRecord
@_exported import struct JobQueue.EventRecord
@_exported import struct JobQueue.RunDescription
@_exported import struct JobQueue.EnqueueResult
@_exported import struct JobQueue.ClaimRequest
@_exported import enum JobQueue.JobQueueError

// The replay buffer's examples, reports and policy.
@_exported import struct ReplayBuffer.ImportOptions
@_exported import struct ReplayBuffer.Example
@_exported import enum ReplayBuffer.Split
@_exported import struct ReplayBuffer.LineageStats
@_exported import struct ReplayBuffer.LineagePolicy
@_exported import struct ReplayBuffer.GateReadiness
@_exported import struct ReplayBuffer.ScrubCounts
@_exported import enum ReplayBuffer.ReplayError

// Pipelines: the pipeline file, the night and time a run is scheduled for, the device policy's view.
@_exported import struct Pipelines.Pipeline
@_exported import struct Pipelines.PipelineProblem
@_exported import enum Pipelines.PipelineError
@_exported import struct Pipelines.Night
@_exported import struct Pipelines.TimeOfDay
@_exported import struct Pipelines.NightlySchedule
@_exported import struct Pipelines.DevicePolicy
@_exported import struct Pipelines.DeviceReadings
@_exported import enum Pipelines.DeviceDecision

// The signed-rank test's options and the gate's report.
@_exported import struct Evaluation.WilcoxonOptions
@_exported import enum Evaluation.Alternative
@_exported import enum Evaluation.WilcoxonMethod
@_exported import enum Evaluation.ZeroMethod
@_exported import struct Evaluation.GateReport

// The LoRA settings `train` parses, and the chat convention `--chat-format` names.
@_exported import enum Model.Projection
@_exported import struct Model.LoRAConfig
@_exported import enum Model.BaseWeightStorage
@_exported import enum Model.ForwardProducts
@_exported import enum Model.ChatConvention

// The registry as a handle the registry commands open read-only or writing, and its names and records.
@_exported import struct Registry.AdapterRegistry
@_exported import struct Registry.AdapterVersion
@_exported import struct Registry.ShortIdentifier
@_exported import struct Registry.VersionReference
@_exported import struct Registry.VersionMetrics

// A run bundle as `run export` reports it and `replay --bundle` reads it.
@_exported import struct Steps.RunBundle
@_exported import enum Steps.RunBundleError
@_exported import enum Steps.StepError
@_exported import struct Registry.AdapterMetadata

// The formats `registry export` writes and `registry add --from-…` reads (the precision through
// `RegistryService.ExportPrecision`: GGUFLoRA itself is the format's reader and writer).
@_exported import enum AdapterExchange.ExchangeFormat
