import AdaptCore
import Foundation
import Glibc
import Testing
import TestSupport

@Test func aFIFOIsRefusedInsteadOfBlockingAReadOrAHash() throws {
    let dir = TemporaryDirectory()
    let fifo = dir.file("pipe")
    #expect(mkfifo(fifo.path, 0o600) == 0)
    #expect(throws: CoreError.fileUnreadable(path: fifo.path, reason: "it is a FIFO, not a regular file")) {
        try AtomicFile.read(fifo)
    }
    #expect(throws: CoreError.self) { try Digest.sha256(fileAt: fifo) }
}

@Test func aDeviceIsRefusedInsteadOfHashedForeverOrReplaced() throws {
    #expect(throws: CoreError.fileUnreadable(path: "/dev/zero", reason: "it is a device, not a regular file")) {
        try Digest.sha256(fileAt: URL(fileURLWithPath: "/dev/zero"))
    }
    let dir = TemporaryDirectory()
    let link = dir.file("out")
    try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "/dev/null")
    #expect(throws: CoreError.self) { try AtomicFile.write(Data("x".utf8), to: link) }
    var status = stat()
    #expect(stat("/dev/null", &status) == 0 && status.st_mode & S_IFMT == S_IFCHR)
    #expect(throws: CoreError.self) { try AtomicFile.write(Data("x".utf8), to: dir.url) }
}

@Test func aSymlinkIsNeverWrittenThroughAndTheFileItNamesIsLeftAlone() throws {
    let dir = TemporaryDirectory()
    let target = dir.file("real")
    try Data("old".utf8).write(to: target)
    let link = dir.file("link")
    try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: target.path)
    #expect(throws: CoreError.fileUnwritable(path: link.path, reason: "it is a symbolic link, which adapt does not write through; name the file itself")) {
        try AtomicFile.write(Data("new".utf8), to: link)
    }
    #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == target.path)
    #expect(try Data(contentsOf: target) == Data("old".utf8))
}

@Test func aReplacedFileIsOwnerOnlyWhateverModeItHad() throws {
    let dir = TemporaryDirectory()
    let file = dir.file("page.html")
    try Data("old".utf8).write(to: file)
    #expect(chmod(file.path, 0o644) == 0)
    try AtomicFile.write(Data("new".utf8), to: file)
    var status = stat()
    #expect(stat(file.path, &status) == 0 && status.st_mode & 0o777 == 0o600)
}
