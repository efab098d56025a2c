import AdaptCore
import Adapters
import Foundation
import Registry

/// The lineage's active adapter where servers can find it: `exports/<lineage>/active.gguf` (GGUF-LoRA, f32)
/// and a `Modelfile` beside it in the state directory, rewritten after every move of the active pointer
/// (`ActiveExportSync`: after the commit, and repaired when `adapt work` starts).
///
/// Each file is replaced atomically, so a server that reads it mid-promotion gets the old adapter or the new
/// one, never half of each. When the lineage falls back to the base model both files are removed.
public enum ActiveAdapterExport {
    /// The directory of a lineage's exports.
    public static func directory(lineage: String, state: StateDirectory) -> URL {
        state.root.appendingPathComponent("exports").appendingPathComponent(lineage)
    }

    /// Writes (or removes) the lineage's active export to match `active`, the adapter file's bytes of the
    /// version now active or nil for the base model. Returns the lines to print: how to serve it.
    public static func update(lineage: String, active: Data?, model: URL, state: StateDirectory) throws -> [String] {
        let directory = directory(lineage: lineage, state: state)
        let gguf = directory.appendingPathComponent("active.gguf"), modelfile = directory.appendingPathComponent("Modelfile")
        // Gone first, written last: a record names an export that is whole (`ActiveExportRecord`).
        try ActiveExportRecord.remove(in: directory)
        guard let active else {
            let modelPath = model.standardizedFileURL.path
            for url in [gguf, modelfile] where FileManager.default.fileExists(atPath: url.path) {
                do { try FileManager.default.removeItem(at: url) } catch {
                    throw AdapterExchangeError.io("cannot remove \(url.path): \(error); remove it by hand")
                }
            }
            return ["serve the base model: llama-server -m \(ShellWord.quoted(modelPath))"]
        }
        let (adapter, _) = try AdapterFile.decode(active, name: "the active adapter")
        let (baseURL, base) = try baseModel(adapter.metadata.baseModelDigest, preferred: model, state: state)
        let modelPath = baseURL.standardizedFileURL.path
        do { try PrivateFiles.createDirectory(directory) } catch {
            throw AdapterExchangeError.io("cannot create \(directory.path); check the state directory's permissions")
        }
        let data = try GGUFLoRA.data(PortableAdapter(file: adapter), base: base, precision: .f32)
        // Ollama resolves ADAPTER relative to the Modelfile; FROM names the base GGUF the adapter was trained on,
        // quoted: a newline in its name would otherwise start an instruction of the name's choosing.
        let text = "FROM \(try ModelfileArgument.quoted(modelPath, naming: "the base model"))\nADAPTER ./active.gguf\n"
        do {
            try AtomicFile.write(data, to: gguf)
            try AtomicFile.write(Data(text.utf8), to: modelfile)
            try ActiveExportRecord.write(Digest.sha256(active), in: directory)
        } catch {
            throw AdapterExchangeError.io("cannot write the active export in \(directory.path): \(error)")
        }
        return ["llama-server -m \(ShellWord.quoted(modelPath)) --lora \(ShellWord.quoted(gguf.path))",
                "ollama create \(ShellWord.quoted(lineage)) -f \(ShellWord.quoted(modelfile.path))"]
    }

    /// The base model the adapter was trained on: `preferred` when it is that file, else the GGUF in the state's
    /// models/ that is (a lineage need not be on the default model).
    static func baseModel(_ digest: Digest, preferred: URL, state: StateDirectory) throws -> (URL, BaseModelShape) {
        let others = ((try? FileManager.default.contentsOfDirectory(at: state.models, includingPropertiesForKeys: nil)) ?? [])
            .filter { $0.pathExtension == "gguf" && $0.standardizedFileURL != preferred.standardizedFileURL }
            .sorted { $0.path < $1.path }
        var given: Digest?
        for candidate in [preferred] + others where FileManager.default.fileExists(atPath: candidate.path) {
            guard let fileDigest = try? Digest.sha256(fileAt: candidate) else { continue }
            given = given ?? fileDigest
            if fileDigest == digest { return (candidate, try BaseModelShape(model: candidate)) }
        }
        throw AdapterExchangeError.modelIsNotTheBase(adapter: "the active adapter", model: given?.hex ?? "none", base: digest.hex)
    }

    /// `update` for whatever the registry says is active now.
    public static func update(lineage: ShortIdentifier, registry: AdapterRegistry, model: URL, state: StateDirectory) throws -> [String] {
        let data = try registry.active(lineage: lineage).map { try registry.adapterData($0) }
        return try update(lineage: lineage.value, active: data, model: model, state: state)
    }
}
