/// Why `RegistryService` could not export or import.
public enum RegistryServiceError: Error, CustomStringConvertible {
    case noActiveVersion(lineage: String)
    case lineageOnOtherBase(lineage: String, lineageBase: String, model: String)

    public var description: String {
        switch self {
        case let .noActiveVersion(lineage):
            return "lineage \(lineage) has no active version; pass --version N"
        case let .lineageOnOtherBase(lineage, lineageBase, model):
            return "lineage \(lineage) is on base model \(lineageBase.prefix(12)), the model given is \(model.prefix(12)); pass the lineage's base model with --model"
        }
    }
}
