import AdapterExchange
import Adapters

/// What an import accepts must export to every format without a trap: an export is where a value read in whole
/// (an alpha of 1e19 turned into an integer) used to trap, after the import had found nothing wrong.
enum AcceptedAdapterExport {
    static func check(_ adapter: PortableAdapter) {
        _ = try? PEFTFormat.files(adapter, base: FuzzBase.shape)
        _ = try? MLXFormat.files(adapter, base: FuzzBase.shape)
        _ = try? GGUFLoRA.data(adapter, base: FuzzBase.shape, precision: .f16)
    }
}
