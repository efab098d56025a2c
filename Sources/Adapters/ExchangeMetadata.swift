import AdaptCore

/// The metadata adapt adds to the files it exports, so an import can tell which base they were made for.
public enum ExchangeMetadata {
    public static let baseModelKey = "adapt.base_model_digest"

    /// Refuses a file that names another base model; a file that names none (made elsewhere) passes to the
    /// shape checks.
    public static func checkBase(_ metadata: [String: String], base: BaseModelShape, file: String) throws(AdapterExchangeError) {
        if let stored = metadata[baseModelKey], let digest = Digest(hex: stored), digest != base.digest {
            throw .otherBaseModel(file: file, expected: base.digest.hex, found: digest.hex)
        }
    }
}
