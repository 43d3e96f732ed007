import BackupCrypto
import BackupModel
import Foundation
import Testing
import Turnkey

/// End-to-end runs of the real binary for the user-side commands: no store, no token.
@Suite(.enabled(if: Binary.exists, "build the executable first: swift build --build-tests"), .timeLimit(.minutes(10)))
struct RecoveryBinaryTests {
    let v = ResetVector.shared
    let keyHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

    func tempFile(_ contents: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("rk-\(UUID().uuidString)")
        try Data(contents.utf8).write(to: url)
        return url.path
    }

    func expectNoSecret(_ run: Binary.Run, sourceLocation: SourceLocation = #_sourceLocation) {
        for secret in [keyHex, "1111111111111111", "0102030405060708"] {
            #expect(!run.stdout.contains(secret) && !run.stderr.contains(secret), sourceLocation: sourceLocation)
        }
    }

    @Test func deriveFromStdinWithNoStoreAndNoToken() async throws {
        let db = FileManager.default.temporaryDirectory.appendingPathComponent("none-\(UUID().uuidString).db").path
        let run = try await Binary.run(
            ["--db", db, "--format", "json", "recovery", "derive"], stdin: v.rootKeyJson + "\n")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == #"{"backupAccountId":"\#(v.backupAccountId)"}"# + "\n")
        #expect(!FileManager.default.fileExists(atPath: db))
        expectNoSecret(run)
    }

    @Test func signWithRootKeyFileIsByteIdenticalToTheVector() async throws {
        let file = try tempFile(v.rootKeyJson)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let run = try await Binary.run(
            ["--format", "json", "-c", "recovery sign --challenge \(v.challengeBase64) --root-key-file \(file)"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == #"{"signature":"\#(v.signatureBase64)"}"# + "\n")
        expectNoSecret(run)
    }

    @Test func stampOverTheExactBodyFile() async throws {
        let body =
            #"{"type":"ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION","timestampMs":"1","organizationId":"x","parameters":{"deleteWithoutExport":true}}"#
        let file = try tempFile(body)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let run = try await Binary.run(
            ["--format", "json", "recovery", "stamp", "--body-file", file], stdin: v.rootKeyJson)
        #expect(run.status == 0, "\(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: String])
        let stamp = try TurnkeyStamp(headerValue: try #require(object["stamp"]))
        #expect(stamp.scheme == .secp256k1)
        #expect(stamp.publicKey == (try BackupAccountID(v.backupAccountId)).publicKey)
        #expect(stamp.verify(body: Array(body.utf8)) == .valid)
        expectNoSecret(run)
    }

    @Test(arguments: [
        (#"{"version":"V1","key":"\#(String(repeating: "11", count: 31))"}"#, "invalid_root_key"),
        (#"{"version":"V1","key":"\#(String(repeating: "1g", count: 32))"}"#, "invalid_root_key"),
        ("", "invalid_root_key"),
    ])
    func badRootKeysExitOneWithoutEchoingThem(_ input: String, _ code: String) async throws {
        let run = try await Binary.run(["--format", "json", "recovery", "derive"], stdin: input)
        #expect(run.status == 1)
        #expect(Binary.errorCode(run.stderr) == code)
        #expect(run.stdout.isEmpty)
        #expect(!run.stderr.contains("1111111111") && !run.stderr.contains("1g1g1g"))
    }

    @Test func badChallengeAndMissingFileAndRootKeyArgument() async throws {
        var run = try await Binary.run(
            ["--format", "json", "recovery", "sign", "--challenge", "AAAA"], stdin: v.rootKeyJson)
        #expect(run.status == 1 && Binary.errorCode(run.stderr) == "invalid_challenge")
        run = try await Binary.run([
            "--format", "json", "recovery", "derive", "--root-key-file", "/nonexistent/rk.json",
        ])
        #expect(run.status == 1 && Binary.errorCode(run.stderr) == "invalid_root_key_file")
        // There is no way to pass the key as an argument.
        run = try await Binary.run(["--format", "json", "recovery", "derive", "--root-key", v.rootKeyJson])
        #expect(run.status == 64)
        expectNoSecret(run)
    }
}
