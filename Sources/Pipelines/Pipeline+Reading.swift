import AdaptCore

/// The schema of a pipeline file, as the sequence of fields each section reads (with its default and its
/// rule). `ObjectReader.finish()` turns whatever is left into "unknown field" problems.
extension Pipeline {
    static func read(_ json: JSONValue, reader: PipelineReader) -> Pipeline? {
        guard let fields = json.objectValue else {
            reader.report("", "a pipeline must be a JSON object, got \(PipelineReader.render(json))")
            return nil
        }
        let root = ObjectReader(path: "", fields: fields, reader: reader)
        let format = root.integer("format", default: formatVersion, minimum: formatVersion, maximum: formatVersion,
                                  "\(formatVersion), the format version this program reads")
        let name = root.text("name", default: "nightly", "a name of letters, digits, '-' or '_'", where: Lineage.isValid)
        let description = root.text("description", default: "", "a string")
        let seed = readSeed(root)
        let prune = readPrune(root.object("prune"))
        let privacy = readPrivacy(root.object("privacy"))
        let sample = readSample(root.object("sample"))
        let train = readTrain(root.object("train"))
        let eval = readEval(root.object("eval"))
        let device = readDevice(root.object("device"))
        let steps = readSteps(root)
        let notify = readNotify(root)
        root.finish()
        guard let steps else { return nil }
        return Pipeline(format: format, name: name, description: description, seed: seed, prune: prune,
                        privacy: privacy, sample: sample, train: train, eval: eval, device: device, steps: steps, notify: notify)
    }

    /// `notify`: null, or a program and its arguments as an array of strings (no shell: nothing is re-split or expanded).
    private static func readNotify(_ root: ObjectReader) -> [String]? {
        guard let value = root.value("notify"), value != .null else { return nil }
        let words = value.arrayValue?.compactMap(\.stringValue)
        guard let words, words.count == value.arrayValue?.count, let program = words.first, !program.isEmpty,
              !words.contains(where: { $0.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F } }) else {
            root.reader.report("notify", "notify must be null or an array of strings, the program first (e.g. [\"notify-send\", \"adapt\"]), "
                               + "without control characters; got \(PipelineReader.render(value))")
            return nil
        }
        return words
    }

    private static func readSeed(_ root: ObjectReader) -> UInt64? {
        guard let value = root.value("seed"), value != .null else { return nil }
        guard let number = value.intValue, number >= 0, UInt64(number) <= maximumSeed else {
            root.reader.report("seed", "seed must be null (a seed per night) or an integer from 0 to \(maximumSeed), "
                               + "got \(PipelineReader.render(value))")
            return nil
        }
        return UInt64(number)
    }

    static func readPrune(_ o: ObjectReader) -> PruneParameters {
        let d = PruneParameters()
        defer { o.finish() }
        return PruneParameters(ttlDays: o.integer("ttl_days", default: d.ttlDays, minimum: 1, maximum: 36_500,
                                                  "a positive whole number of days"),
                               ttlRetiresAdapters: o.boolean("ttl_retires_adapters", default: d.ttlRetiresAdapters))
    }

    static func readPrivacy(_ o: ObjectReader) -> PrivacyBudget {
        let d = PrivacyBudget()
        defer { o.finish() }
        return PrivacyBudget(
            maxUsesPerExample: o.integer("max_uses_per_example", default: d.maxUsesPerExample, minimum: 1, maximum: 1_000_000,
                                         "a positive integer"),
            maxTokensPerNight: o.integer("max_tokens_per_night", default: d.maxTokensPerNight, minimum: 1,
                                         maximum: 1_000_000_000, "a positive integer"))
    }

    static func readSample(_ o: ObjectReader) -> SampleParameters {
        let d = SampleParameters()
        defer { o.finish() }
        return SampleParameters(
            sampleSize: o.integer("sample_size", default: d.sampleSize, minimum: 1, maximum: 1_000_000, "a positive integer"),
            heldOutFraction: o.number("held_out_fraction", default: d.heldOutFraction,
                                      "a number strictly between 0 and 1") { $0 > 0 && $0 < 1 })
    }

    static func readTrain(_ o: ObjectReader) -> TrainParameters {
        let d = TrainParameters()
        defer { o.finish() }
        let steps = o.integer("steps", default: d.steps, minimum: 1, maximum: 10_000_000, "a positive integer")
        let rank = o.integer("rank", default: d.rank, minimum: 1, maximum: 1024, "a positive integer")
        // The largest alpha an adapter file may record (`AdapterSettings.maximumAlpha`), so that what `pipeline check`
        // accepts the train step can run.
        let alpha = o.number("alpha", default: d.alpha, "a number above 0 and at most 1000000") { $0 > 0 && $0 <= TrainParameters.maximumAlpha }
        let dropout = o.number("dropout", default: d.dropout, "a number from 0 up to but not including 1") { $0 >= 0 && $0 < 1 }
        let targets = readTargets(o) ?? d.targets
        let learningRate = o.number("learning_rate", default: d.learningRate, "a positive number no greater than 1") {
            $0 > 0 && $0 <= 1
        }
        let schedule = o.choice("schedule", default: d.schedule)
        var warmup = o.integer("warmup_steps", default: d.warmupSteps, minimum: 0, maximum: 10_000_000, "a non-negative integer")
        if warmup > steps {
            o.reader.report(o.path(of: "warmup_steps"),
                            "\(o.path(of: "warmup_steps")) must be at most \(o.path(of: "steps")) (\(steps)), got \(warmup)")
            warmup = min(d.warmupSteps, steps)
        }
        let batch = o.integer("batch_size", default: d.batchSize, minimum: 1, maximum: 4096, "a positive integer")
        let accumulation = o.integer("grad_accumulation", default: d.gradAccumulation, minimum: 1, maximum: 4096,
                                     "a positive integer")
        let maxLength = o.integer("max_length", default: d.maxLength, minimum: 8, maximum: 8192,
                                  "an integer of at least 8 tokens")
        let interval = o.integer("checkpoint_interval", default: d.checkpointInterval, minimum: 1, maximum: 10_000_000,
                                 "a positive integer")
        let earlyStopping = readEarlyStopping(o, default: d.earlyStopping)
        let threads = readThreads(o, default: d.blasThreads)
        let chatFormat = readChatFormat(o)
        let baseWeights = o.choice("base_weights", default: d.baseWeights)
        let forwardProducts = o.choice("forward_products", default: d.forwardProducts)
        let initFrom = o.choice("init", default: d.initFrom ?? .active)
        return TrainParameters(steps: steps, rank: rank, alpha: alpha, dropout: dropout, targets: targets,
                               learningRate: learningRate, schedule: schedule, warmupSteps: warmup, batchSize: batch,
                               gradAccumulation: accumulation, maxLength: maxLength, checkpointInterval: interval,
                               earlyStopping: earlyStopping, blasThreads: threads, chatFormat: chatFormat,
                               baseWeights: baseWeights, forwardProducts: forwardProducts, initFrom: initFrom)
    }

    /// `blas_threads`: `"auto"` or a count from 1 to 256.
    static func readThreads(_ o: ObjectReader, default fallback: BLASThreadCount) -> BLASThreadCount {
        guard let value = o.value("blas_threads") else { return fallback }
        if let count = BLASThreadCount(value) { return count }
        let path = o.path(of: "blas_threads")
        var message = "\(path) must be \(BLASThreadCount.allowedValues), got \(PipelineReader.render(value))"
        if let text = value.stringValue, NearestName.suggestion(for: text, among: [BLASThreadCount.autoName]) != nil {
            message += "; did you mean \(BLASThreadCount.autoName)?"
        }
        o.reader.report(path, message)
        return fallback
    }

    /// `chat_format`: absent or null for the model's own template.
    static func readChatFormat(_ o: ObjectReader) -> ChatFormat? {
        guard let value = o.value("chat_format"), value != .null else { return nil }
        return o.choice("chat_format", default: ChatFormat.plain)
    }

    private static func readTargets(_ o: ObjectReader) -> [LoRATarget]? {
        let names = LoRATarget.allCases.map(\.rawValue)
        let path = o.path(of: "targets")
        guard let texts = o.strings("targets", default: TrainParameters().targets.map(\.rawValue),
                                    "an array of projection names (\(names.joined(separator: ", ")))") else { return nil }
        guard !texts.isEmpty else {
            o.reader.report(path, "\(path) must list at least one of \(names.joined(separator: ", "))")
            return nil
        }
        var targets: [LoRATarget] = []
        var ok = true
        for (index, text) in texts.enumerated() {
            let itemPath = "\(path)[\(index)]"
            guard let target = LoRATarget(rawValue: text) else {
                var message = "\(itemPath) must be one of \(names.joined(separator: ", ")), got \"\(PipelineError.abbreviated(text))\""
                if let near = LoRATarget.peftNames[text]?.rawValue ?? NearestName.suggestion(for: text, among: names) {
                    message += "; did you mean \(near)?"
                }
                o.reader.report(itemPath, message)
                ok = false
                continue
            }
            if targets.contains(target) {
                o.reader.report(itemPath, "\(itemPath) repeats \"\(text)\"; list each projection once")
                ok = false
            }
            targets.append(target)
        }
        return ok ? targets : nil
    }

    private static func readEarlyStopping(_ o: ObjectReader, default fallback: EarlyStopping?) -> EarlyStopping? {
        guard let value = o.value("early_stopping") else { return fallback }
        if value == .null { return nil }
        guard value.objectValue != nil else {
            let path = o.path(of: "early_stopping")
            o.reader.report(path, "\(path) must be an object {every_steps, patience} or null (no early stopping), "
                            + "got \(PipelineReader.render(value))")
            return fallback
        }
        let e = o.object("early_stopping")
        let d = EarlyStopping()
        defer { e.finish() }
        return EarlyStopping(
            everySteps: e.integer("every_steps", default: d.everySteps, minimum: 1, maximum: 10_000_000, "a positive integer"),
            patience: e.integer("patience", default: d.patience, minimum: 1, maximum: 10_000, "a positive integer"))
    }

    static func readEval(_ o: ObjectReader) -> EvalParameters {
        let d = EvalParameters()
        defer { o.finish() }
        return EvalParameters(
            alpha: o.number("alpha", default: d.alpha, "a number above 0 and at most 0.5") { $0 > 0 && $0 <= 0.5 },
            minPairs: o.integer("min_pairs", default: d.minPairs, minimum: 1, maximum: 1_000_000, "a positive integer"),
            alternative: o.choice("alternative", default: d.alternative),
            zeroMethod: o.choice("zero_method", default: d.zeroMethod),
            onWorse: o.choice("on_worse", default: d.onWorse),
            minEffect: o.number("min_effect", default: d.minEffect ?? 0, "a number of nats of at least 0 and at most 10 (0: no minimum)") {
                $0 >= 0 && $0 <= 10
            },
            canary: readCanary(o, default: d.canary))
    }

    /// `eval.canary`: an object `{delta, alpha, fluency_delta, fluency_reference}` (each with its default; `{}`, the default, is the guard
    /// with every default), or null for no forgetting guard.
    private static func readCanary(_ o: ObjectReader, default fallback: CanaryGuard?) -> CanaryGuard? {
        guard let value = o.value(CanaryGuard.field) else { return fallback }
        if value == .null { return nil }
        let path = o.path(of: CanaryGuard.field)
        guard value.objectValue != nil else {
            o.reader.report(path, "\(path) must be an object {delta, alpha, fluency_delta, fluency_reference} or null (no forgetting guard), "
                            + "got \(PipelineReader.render(value))")
            return fallback
        }
        let c = o.object(CanaryGuard.field)
        let d = CanaryGuard()
        defer { c.finish() }
        return CanaryGuard(
            delta: c.number("delta", default: d.delta, "a number of nats of at least 0 and at most 100") { $0 >= 0 && $0 <= 100 },
            alpha: c.number("alpha", default: d.alpha, "a number above 0 and at most 0.5") { $0 > 0 && $0 <= 0.5 },
            fluencyDelta: c.number("fluency_delta", default: d.fluencyDelta ?? CanaryGuard.defaultFluencyDelta,
                                   "a number of nats per token of at least 0 and at most 100") { $0 >= 0 && $0 <= 100 },
            fluencyReference: c.choice("fluency_reference", default: d.fluencyReference ?? .incumbent))
    }

    static func readDevice(_ o: ObjectReader) -> DevicePolicy {
        let d = DevicePolicy()
        defer { o.finish() }
        return DevicePolicy(
            minBatteryPercent: o.integer("min_battery_percent", default: d.minBatteryPercent, minimum: 0, maximum: 100,
                                         "an integer from 0 to 100"),
            maxTemperatureCelsius: o.number("max_temperature_celsius", default: d.maxTemperatureCelsius,
                                            "a number of degrees Celsius above 0 and at most 150") { $0 > 0 && $0 <= 150 },
            minAvailableMemoryMB: o.integer("min_available_memory_mb", default: d.minAvailableMemoryMB, minimum: 0,
                                            maximum: 16_777_216, "a non-negative number of MiB"),
            retryAfterMinutes: o.integer("retry_after_minutes", default: d.retryAfterMinutes, minimum: 1, maximum: 1440,
                                         "a positive number of minutes"))
    }

    private static func readSteps(_ root: ObjectReader) -> [PipelineStep]? {
        guard let value = root.value("steps") else { return nightly.steps }
        guard let items = value.arrayValue else {
            root.reader.report("steps", "steps must be an array of steps, got \(PipelineReader.render(value))")
            return nil
        }
        guard !items.isEmpty else {
            root.reader.report("steps", "steps must list at least one step")
            return nil
        }
        var nodes: [PipelineGraph.Node] = []
        var specs: [PipelineStep] = []
        for (index, item) in items.enumerated() {
            let path = "steps[\(index)]"
            guard let fields = item.objectValue else {
                root.reader.report(path, "\(path) must be an object {name, kind, depends_on, …}, got \(PipelineReader.render(item))")
                continue
            }
            let o = ObjectReader(path: path, fields: fields, reader: root.reader)
            let name = o.requiredText("name", "a step name of letters, digits, '-' or '_'", where: Lineage.isValid)
            let kind = readKind(o)
            let dependsOn = o.strings("depends_on", default: [], "an array of step names")
            let fallbackKind = kind ?? .prune
            let attempts = o.integer("max_attempts", default: fallbackKind.defaultMaxAttempts, minimum: 1, maximum: 1000,
                                     "a positive integer")
            let lease = o.integer("lease_seconds", default: fallbackKind.defaultLeaseSeconds, minimum: 1, maximum: 86_400,
                                  "a positive number of seconds")
            let priority = o.integer("priority", default: 0, minimum: -1_000_000, maximum: 1_000_000,
                                     "an integer from -1000000 to 1000000")
            let timeout = readTimeout(o)
            o.finish()
            nodes.append(PipelineGraph.Node(index: index, name: name, kind: kind, dependsOn: dependsOn))
            if let name, let kind, let dependsOn {
                specs.append(PipelineStep(name: name, kind: kind, dependsOn: dependsOn, maxAttempts: attempts,
                                      leaseSeconds: lease, priority: priority, timeoutSeconds: timeout))
            }
        }
        PipelineGraph.check(nodes, reader: root.reader)
        return specs.count == items.count ? specs : nil
    }

    /// A step's `timeout_seconds`: absent or null for none, else 1 s to a week (the job engine's bound).
    private static func readTimeout(_ o: ObjectReader) -> Int? {
        guard let value = o.value("timeout_seconds"), value != .null else { return nil }
        return o.integer("timeout_seconds", default: 0, minimum: 1, maximum: 604_800,
                         "a number of seconds from 1 to 604800 (a week), or null for no timeout")
    }

    private static func readKind(_ o: ObjectReader) -> StepKind? {
        let names = StepKind.allCases.map(\.rawValue)
        guard o.has("kind") else {
            _ = o.value("kind")
            o.reader.report(o.path(of: "kind"), "\(o.path(of: "kind")) is required: one of \(names.joined(separator: ", "))")
            return nil
        }
        let before = o.reader.problems.count
        let kind = o.choice("kind", default: StepKind.prune)
        return o.reader.problems.count == before ? kind : nil
    }
}
