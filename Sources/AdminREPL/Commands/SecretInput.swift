import BackupModel
import Foundation

/// Reads a credential-like value (a reset token, a signature) without putting it in argv:
/// from a file (`-` is stdin), else a prompt on a terminal (hidden for secrets), else stdin.
/// Command-line values are still accepted for scripts that already pass them, but process
/// arguments are world-readable in /proc, so the runbooks use the file and prompt forms.
enum SecretInput {
    /// - Parameters:
    ///   - value: the value given as an argument, if any.
    ///   - file: `--…-file PATH`, `-` for stdin.
    ///   - what: what it is, for prompts and errors ("reset token").
    ///   - hidden: whether a prompt hides what is typed.
    /// - Throws: `invalid_input_file` for an unreadable file; `usage` when two sources are given
    ///   or none can be read; `missing_value` for an empty value.
    static func read(value: String?, file: String?, what: String, flag: String, hidden: Bool) throws(ConsoleError)
        -> SecretBytes
    {
        var bytes: [UInt8]
        switch (value, file) {
        case (.some, .some):
            throw .usage("Give the \(what) once: --\(flag) or --\(flag)-file, not both.")
        case (.some(let text), nil):
            bytes = Array(text.utf8)
        case (nil, .some("-")):
            guard !Terminal.stdinCarriesCommands else {
                throw .usage(
                    "stdin carries the commands here, so it cannot carry the \(what) too; use --\(flag)-file PATH.")
            }
            bytes = Terminal.readAllOrLine(fd: STDIN_FILENO) ?? []
        case (nil, .some(let path)):
            // A FIFO or device is refused, never waited on; the path is not repeated (it may be
            // the secret itself, given to the wrong option).
            guard let data = try? InputFile.read(path, what: "The \(what) file", maxBytes: 64 << 10) else {
                throw .invalid(
                    "invalid_input_file",
                    "Cannot read the \(what) file given to --\(flag)-file (missing, unreadable or not a regular file).")
            }
            bytes = data
        case (nil, nil):
            guard Terminal.stdinIsTerminal else {
                throw .usage("Give the \(what) with --\(flag)-file PATH (or - for stdin).")
            }
            if hidden {
                bytes = try Terminal.readSecret(prompt: "\(what) (input hidden): ")
            } else {
                FileHandle.standardError.write(Data("\(what): ".utf8))
                bytes = Array((Terminal.readLine() ?? "").utf8)
            }
        }
        defer { bytes.withUnsafeMutableBytes { for i in $0.indices { $0[i] = 0 } } }
        // One word: surrounding whitespace and line ends (files end in a newline) are dropped.
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        guard let start = bytes.firstIndex(where: { !isSpace($0) }), let end = bytes.lastIndex(where: { !isSpace($0) })
        else {
            throw .invalid("missing_value", "The \(what) is empty.")
        }
        return SecretBytes(bytes[start...end])
    }
}

/// A new file for a secret: created exclusively with mode 0600 before the secret exists, so
/// an unusable path is refused before anything is issued, and nobody else can read it.
struct SecretFile {
    let path: String
    let fd: Int32

    /// - Throws: `invalid_output_file` when the file exists or cannot be created.
    static func create(_ path: String, what: String) throws(ConsoleError) -> SecretFile {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let reason = errno == EEXIST ? "it already exists" : String(cString: strerror(errno))
            throw .invalid("invalid_output_file", "Cannot create the \(what) file \(path): \(reason).")
        }
        return SecretFile(path: path, fd: fd)
    }

    func write(_ bytes: [UInt8]) throws(ConsoleError) {
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else {
            unlink(path)
            throw .internalError("Writing \(path) failed: \(String(cString: strerror(errno))).")
        }
    }

    /// Replaces the file at `path` with `bytes` (a rotated token for the file a context names):
    /// written to a new 0600 file beside it, then renamed over it, so the old token stays until
    /// the new one is whole.
    static func replace(_ path: String, with bytes: [UInt8]) throws(ConsoleError) {
        let temporary = path + ".new-\(getpid())"
        let file = try create(temporary, what: "token")
        try file.write(bytes)
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw .internalError("Replacing \(path) failed: \(String(cString: strerror(errno))).")
        }
    }

    /// Closes and removes the file (nothing was issued).
    func discard() {
        close(fd)
        unlink(path)
    }
}
