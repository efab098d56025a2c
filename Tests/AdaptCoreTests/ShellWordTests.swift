import AdaptCore
import Foundation
import Testing
import TestSupport

@Test(arguments: [
    "/models/plain-name_1.gguf", "with space.gguf", "it's \"quoted\"", "$(touch pwned) `x` ; *", "line\nbreak",
    "\u{1b}]0;title\u{07}\u{1b}[2J", "tab\tand\u{7f}del", "bidi \u{202e}fdp.exe", "~user", "", "back\\slash\n'",
])
func aShellWordIsReadBackByBashExactlyAndPrintsNoControlCharacter(word: String) throws {
    let quoted = ShellWord.quoted(word)
    #expect(!quoted.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || (0x202A...0x202E).contains($0.value) })
    let result = try Executables.run(executableAt: URL(fileURLWithPath: "/bin/bash"), ["-c", "printf %s " + quoted])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout == word, "\(quoted)")
}
