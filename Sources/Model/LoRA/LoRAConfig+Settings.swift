import Adapters

/// A target in adapter settings that names no projection of a llama block.
public struct UnknownProjection: Error, Equatable {
    public let name: String

    public init(name: String) { self.name = name }
}

/// The one translation between the settings adapter files and training configurations record (targets as
/// names) and the configuration the model applies (targets as projections).
extension LoRAConfig {
    public init(_ settings: AdapterSettings) throws(UnknownProjection) {
        var targets: [Projection] = []
        for name in settings.targets {
            guard let projection = Projection(rawValue: name) else { throw UnknownProjection(name: name) }
            targets.append(projection)
        }
        self.init(rank: settings.rank, alpha: settings.alpha, dropout: settings.dropout, targets: targets)
    }

    public var settings: AdapterSettings {
        AdapterSettings(rank: rank, alpha: alpha, dropout: dropout, targets: targets.map(\.rawValue))
    }
}
