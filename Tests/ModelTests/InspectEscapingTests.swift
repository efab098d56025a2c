import Foundation
import Model
import Testing
import TestSupport

/// `adapt model inspect` names what a file says it is; a file's text that holds terminal escape codes is shown
/// escaped, never acted on by the terminal.
@Test func inspectShowsACraftedArchitectureNameEscapedNotRaw() throws {
    let directory = TemporaryDirectory("inspect-escapes")
    let file = directory.file("crafted.gguf")
    var model = TinyModel(seed: 1)
    // Retitles the window, rings the bell, then clears the screen, where printed raw.
    model.architecture = "\u{1b}]0;owned\u{07}\u{1b}[2Jllama\u{9b}31m\u{202e}"
    try model.write(to: file)
    let result = try Executables.run("adapt", ["model", "inspect", file.path])
    #expect(result.status == 0, "\(result.stderr)")
    for output in [result.stdout, result.stderr] {
        #expect(!output.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B || $0.value == 0x202E },
                "\(output.debugDescription)")
    }
    #expect(result.stderr.contains("unsupported: architecture \\x1b]0;owned\\x07\\x1b[2Jllama\\u{9b}31m\\u{202e}"), "\(result.stderr)")
}
