import ArgumentParser
import BackupModel
import Foundation
import Recovery

/// `recovery derive|sign|stamp`: the user side of /reset. No store, no operator token — only
/// the Root Key, read from `--root-key-file`, a hidden prompt, or stdin (never an argument).
struct RecoveryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recovery",
        abstract: "User side of a reset: derive the Backup Account ID, sign a challenge, stamp a Turnkey body.",
        discussion: """
            The Root Key JSON ({"version":"V1","key":"<64 hex>"} or the legacy V0 form) is read from \
            --root-key-file, else from a hidden prompt on a terminal, else from stdin. It is never \
            accepted as an argument and never printed.
            """,
        subcommands: [Derive.self, Sign.self, Stamp.self])

    struct Derive: ConsoleCommand, ReadsStdin {
        static let configuration = CommandConfiguration(abstract: "Print the Backup Account ID of a Root Key.")

        @Option(help: "File holding the Root Key JSON (default: hidden prompt, else stdin).") var rootKeyFile: String?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let rootKey = try RootKeyInput.read(file: rootKeyFile)
            let id = try UserRecovery.backupAccountID(rootKey: rootKey).rawValue
            return CommandOutput(json: ["backupAccountId": id]) { style in
                keyValueBlock([("backupAccountId", id)], style)
            }
        }
    }

    struct Sign: ConsoleCommand, ReadsStdin {
        static let configuration = CommandConfiguration(
            abstract: "Sign a reset challenge with the Backup Account Key (standard base64 DER).")

        @Option(help: "The challenge from `reset begin`: standard base64 of 32 bytes.") var challenge: String
        @Option(help: "File holding the Root Key JSON (default: hidden prompt, else stdin).") var rootKeyFile: String?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            // The challenge is checked before the Root Key is asked for.
            let bytes = try UserRecovery.challengeBytes(base64: challenge)
            let rootKey = try RootKeyInput.read(file: rootKeyFile)
            let signature = try UserRecovery.signChallenge(bytes, rootKey: rootKey)
            return CommandOutput(json: ["signature": signature]) { style in
                keyValueBlock([("signature", signature)], style) + "\n"
                    + style.dim("Give this signature to the operator; it proves the Root Key without revealing it.")
            }
        }
    }

    struct Stamp: ConsoleCommand, ReadsStdin {
        static let configuration = CommandConfiguration(
            abstract: "Stamp a Turnkey request body as the break-glass user (X-Stamp, secp256k1 scheme).")

        @Option(help: "File holding the exact request body bytes to stamp.") var bodyFile: String
        @Option(help: "File holding the Root Key JSON (default: hidden prompt, else stdin).") var rootKeyFile: String?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let body = try InputFile.read(
                bodyFile, what: "The body file", maxBytes: 1 << 20, code: "invalid_body_file")
            guard !body.isEmpty else {
                throw ConsoleError.invalid("invalid_body_file", "The body file \(bodyFile) is empty.")
            }
            let rootKey = try RootKeyInput.read(file: rootKeyFile)
            let stamp = try UserRecovery.stamp(body: Array(body), rootKey: rootKey).headerValue
            return CommandOutput(json: ["stamp": stamp]) { style in
                keyValueBlock([("stamp", stamp)], style) + "\n"
                    + style.dim("Valid only for the exact bytes of \(bodyFile); send them unchanged.")
            }
        }
    }
}

/// Reads the Root Key JSON for the recovery commands and the walkthrough's present-user mode.
enum RootKeyInput {
    /// From `file`, else a hidden prompt on a terminal, else stdin to EOF. The raw bytes are
    /// wiped as soon as they are parsed into the ``RootKey``'s ``SecretBytes``.
    /// - Throws: ``ConsoleError`` `invalid_root_key_file` for an unreadable file; `invalid_root_key`
    ///   for empty or malformed input, naming the rule broken.
    /// Why the Root Key cannot come from stdin (it carries the script's commands), if so.
    static func stdinRefusal(file: String?) -> ConsoleError? {
        guard file == nil, !Terminal.stdinIsTerminal, Terminal.stdinCarriesCommands else { return nil }
        return .usage("stdin carries the commands here, so it cannot carry the Root Key too; pass --root-key-file.")
    }

    static func read(file: String?, prompt: String = "Root Key JSON (input hidden): ") throws(ConsoleError) -> RootKey {
        var bytes: [UInt8]
        if let file {
            // A FIFO or device is refused, never waited on; the value is not repeated: a key
            // pasted here by mistake must not be printed.
            guard let data = try? InputFile.read(file, what: "The Root Key file", maxBytes: 64 << 10) else {
                throw .invalid(
                    "invalid_root_key_file",
                    "Cannot read the file given to --root-key-file (the value is not repeated here in case it is the key itself); pass the path of a readable file holding the Root Key JSON."
                )
            }
            bytes = Array(data)
        } else {
            if let refusal = stdinRefusal(file: nil) { throw refusal }
            bytes = try Terminal.readSecret(prompt: prompt)
        }
        defer { bytes.withUnsafeMutableBytes { for i in $0.indices { $0[i] = 0 } } }
        return try UserRecovery.rootKey(json: bytes)
    }
}

extension RecoveryCommand.Derive {
    var stdinRefusal: ConsoleError? { RootKeyInput.stdinRefusal(file: rootKeyFile) }
}

extension RecoveryCommand.Sign {
    var stdinRefusal: ConsoleError? { RootKeyInput.stdinRefusal(file: rootKeyFile) }
}

extension RecoveryCommand.Stamp {
    var stdinRefusal: ConsoleError? { RootKeyInput.stdinRefusal(file: rootKeyFile) }
}
