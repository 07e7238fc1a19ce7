import Foundation
import Testing
@testable import Config

@Suite struct SecretsDirectoryTests {
    @Test func onlyRealFilesUnderTheDirectoryQualify() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("secrets-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let secrets = root.appendingPathComponent("secrets")
        try FileManager.default.createDirectory(at: secrets, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try "123456\n".write(to: secrets.appendingPathComponent("lock.passkey"), atomically: true, encoding: .utf8)
        try "654321\n".write(to: root.appendingPathComponent("outside.passkey"), atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(at: secrets.appendingPathComponent("link"),
                                                   withDestinationURL: root.appendingPathComponent("outside.passkey"))
        let dir = secrets.path
        let real = try #require(SecretsDirectory.realPath(dir))
        #expect(SecretsDirectory.locate("lock.passkey", in: dir) == real + "/lock.passkey")
        #expect(SecretsDirectory.locate(dir + "/lock.passkey", in: dir) == real + "/lock.passkey")
        for outside in ["../outside.passkey", "link", root.path + "/outside.passkey", "/etc/hostname", "missing", "",
                        dir, dir + "/"] {
            #expect(SecretsDirectory.locate(outside, in: dir) == nil, "\(outside)")
        }
        #expect(SecretsDirectory.locate("lock.passkey", in: root.path + "/nonexistent") == nil)
    }
}
