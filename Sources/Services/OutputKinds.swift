import AdaptCore
import AdapterExchange
import Adapters
import Foundation
import Model
import Steps

/// The kinds of file the commands write where a user points them, each told by its first bytes: an existing
/// `--out` is replaced only when it is of the kind the command writes (`OutputTarget`).
extension OutputKind {
    /// `adapt train --out`: the adapter file's magic.
    public static let adapterFile = OutputKind("an adapt adapter file", magic: Data(AdapterFile.magic))

    /// `adapt registry export --format gguf-lora --out`: a GGUF whose `general.type` is `adapter`, as llama.cpp's
    /// converter and `GGUFLoRA` write it; a whole model (`model` or no type) is another kind, not to be replaced.
    public static let ggufLoRA = OutputKind("a GGUF-LoRA adapter") { head, url in
        head.starts(with: Data("GGUF".utf8)) && (try? GGUFFile(url: url))?.string("general.type") == "adapter"
    }

    /// `adapt run export --out`: the bundle's magic.
    public static let runBundle = OutputKind("a run bundle", magic: RunBundle.magic)

    /// `adapt report --out`: a page that opens with a doctype or an html element (case and leading space aside).
    public static let htmlPage = OutputKind("an HTML page") { head in
        let text = String(decoding: head, as: UTF8.self).drop { $0.isWhitespace || $0 == "\u{FEFF}" }.lowercased()
        return text.hasPrefix("<!doctype html") || text.hasPrefix("<html")
    }

    /// A safetensors file: an 8-byte little-endian header length, then the JSON header (safetensors' format).
    public static let safetensors = OutputKind("a safetensors file") { head in
        head.count > 8 && head[head.startIndex + 8] == UInt8(ascii: "{")
    }

    /// A JSON object (an adapter's `adapter_config.json`).
    public static let jsonObject = OutputKind("a JSON file") { head in
        head.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) } == UInt8(ascii: "{")
    }

    /// A roff manual page, as `adapt manual` writes them: a comment line or the title macro first.
    public static let manualPage = OutputKind("a manual page") { head in
        [".\\\"", "'\\\"", ".TH"].contains { head.starts(with: Data($0.utf8)) }
    }

    /// The files `registry export --format format` writes into its directory (nil: the format writes one file).
    public static func files(of format: ExchangeFormat) -> [(name: String, kind: OutputKind)]? {
        switch format {
        case .ggufLoRA: return nil
        case .peft: return [(PEFTFormat.weightsFile, .safetensors), (PEFTFormat.configFile, .jsonObject)]
        case .mlx: return [(MLXFormat.weightsFile, .safetensors), (MLXFormat.configFile, .jsonObject)]
        }
    }
}
