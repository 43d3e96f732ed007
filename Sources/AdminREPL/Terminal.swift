import BackupModel
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Facts about the process's terminal and plain line I/O on the standard streams.
enum Terminal {
    static var stdinIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }

    /// Set once at launch when commands are read from stdin (piped or `-f -`): then stdin
    /// cannot also carry a secret.
    nonisolated(unsafe) static var stdinCarriesCommands = false
    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Columns of the terminal on stdout, or `nil` when it is not one.
    static var width: Int? {
        guard stdoutIsTerminal else { return nil }
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 80
    }

    static func writeOut(_ text: String) {
        emit(text, fd: STDOUT_FILENO)
    }

    static func writeErr(_ text: String) {
        emit(text, fd: STDERR_FILENO)
    }

    /// While set, output lines wait in `held`, in order, until ``releaseHeld()`` writes them or
    /// ``discardHeld()`` drops them: a script's lookups and `show`s print only once their audit
    /// entries committed (``BatchRunner``).
    nonisolated(unsafe) static var holding = false
    nonisolated(unsafe) private static var held: [HeldLine] = []

    /// An output line waiting for its reads' audit entries, and the stream it is for.
    typealias HeldLine = (fd: Int32, bytes: [UInt8])

    /// A REPL command the operator stopped waiting for: whatever it prints later is dropped.
    final class Abandonment: Sendable {
        private let flag = Atomic<Bool>(false)
        func set() { flag.store(true, ordering: .releasing) }
        var isSet: Bool { flag.load(ordering: .acquiring) }
    }

    /// The abandonment of the command this task runs, if the REPL runs it.
    @TaskLocal static var abandonment: Abandonment?

    private static func emit(_ text: String, fd: Int32) {
        if abandonment?.isSet == true { return }
        var bytes = Array(SafeText.unmarked(text).utf8)
        bytes.append(0x0A)
        if holding {
            held.append((fd, bytes))
        } else {
            writeAll(bytes, fd: fd)
        }
    }

    /// Writes the waiting lines, in order, to the streams they were meant for: consecutive
    /// lines of one stream in one write (a script's run of lookups is one write, not hundreds).
    static func releaseHeld() { writeHeld(takeHeld()) }

    /// The waiting lines, no longer waiting: ``writeHeld(_:)`` writes them later, in order.
    static func takeHeld() -> [HeldLine] {
        defer { held = [] }
        return held
    }

    /// Writes lines taken from ``takeHeld()``, consecutive lines of one stream in one write.
    static func writeHeld(_ lines: [HeldLine]) {
        var run: [UInt8] = []
        var runFd: Int32 = -1
        for line in lines {
            if line.fd != runFd, !run.isEmpty {
                writeAll(run, fd: runFd)
                run.removeAll(keepingCapacity: true)
            }
            runFd = line.fd
            run += line.bytes
        }
        if !run.isEmpty { writeAll(run, fd: runFd) }
    }

    /// Drops the waiting lines (their reads could not be audited).
    static func discardHeld() { held = [] }

    private static func writeAll(_ bytes: [UInt8], fd: Int32) {
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            var offset = 0
            while offset < raw.count {
                let n = write(fd, base + offset, raw.count - offset)
                if n < 0, errno == EINTR { continue }
                if n <= 0 { return }
                offset += n
            }
        }
    }

    /// A hidden prompt ended on CR: an LF first on the next line read is that CR's (CRLF).
    nonisolated(unsafe) static var skipLF = false

    /// Reads one line from a file descriptor without buffering past the newline, so a later
    /// reader (a hidden prompt, the next command) sees the rest.
    static func readLine(fd: Int32 = STDIN_FILENO) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        var skipping = skipLF
        skipLF = false
        while true {
            let n = read(fd, &byte, 1)
            if n <= 0 { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            defer { skipping = false }
            if skipping, byte == 0x0A { continue }
            if byte == 0x0a { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
    }

    /// ``readLine(fd:)`` for an answer at a prompt of a running command: Ctrl-C (the signal
    /// flag's pipe) cancels it instead of being lost in the read.
    /// - Throws: `cancelled` on Ctrl-C.
    static func readAnswer() throws(ConsoleError) -> String? {
        let signals = SignalFlag.pipeReadEnd
        if signals >= 0 {
            // Bounded by the user: each pass waits for a key or a signal.
            while true {
                if SignalFlag.isRaised {
                    SignalFlag.drain()
                    throw ConsoleError(.usage, code: "cancelled", "Cancelled (Ctrl-C).")
                }
                var fds = [
                    pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: signals, events: Int16(POLLIN), revents: 0),
                ]
                let ready = poll(&fds, 2, -1)
                if ready < 0, errno == EINTR { continue }
                if fds[0].revents != 0 { break }
            }
        }
        return readLine()
    }

    /// Reads a secret with echo off when stdin is a terminal; the bytes are wiped by the caller.
    ///
    /// The terminal is put in non-canonical mode with its signal keys off for the read, so every
    /// key is this prompt's: Enter ends it, except inside a JSON object (a `{` first) whose
    /// closing brace has not come yet, so a Root Key typed or pasted over several lines stays
    /// hidden to the end; Backspace and Ctrl-U edit; Ctrl-D ends the input; Ctrl-Z does nothing
    /// (a prompt suspended and resumed would come back with the shell's echo on).
    /// - Throws: `cancelled` on Ctrl-C: nothing was read.
    static func readSecret(prompt: String) throws(ConsoleError) -> [UInt8] {
        let fd = STDIN_FILENO
        guard isatty(fd) == 1 else { return readAllOrLine(fd: fd) ?? [] }
        var old = termios()
        tcgetattr(fd, &old)
        var hidden = old
        hidden.c_lflag &= ~tcflag_t(ECHO | ECHONL | ICANON | ISIG | IEXTEN)
        // CR and LF arrive as they are, so a pasted CRLF ends the secret once (below).
        hidden.c_iflag &= ~tcflag_t(ICRNL | INLCR | IGNCR)
        withUnsafeMutableBytes(of: &hidden.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        // A stop signal while the prompt waits ends the process with the terminal's modes put
        // back: it would otherwise die, or be ended by the interrupt watchdog, with echo off.
        modesBeforeHidden = old
        let previous = HiddenPromptStop.install()
        // Echo goes off before the prompt shows, and what was typed before it is dropped (as
        // getpass does): whatever the user types once they see the prompt is neither echoed
        // nor lost. Setting the mode after the prompt lost a key typed quickly, and could
        // echo it.
        tcsetattr(fd, TCSAFLUSH, &hidden)
        FileHandle.standardError.write(Data(prompt.utf8))
        defer {
            // TCSANOW keeps what the user typed after the secret (the next answer).
            tcsetattr(fd, TCSANOW, &old)
            HiddenPromptStop.restore(previous)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        var line = SecretLine()
        var byte: UInt8 = 0
        reading: while true {
            let n = read(fd, &byte, 1)
            if n < 0, errno == EINTR { continue }
            guard n == 1 else { break }
            switch line.take(byte) {
            case .more: continue
            case .done:
                // A CR ending the secret may have its LF right behind (a pasted CRLF): that LF
                // is this secret's, not an empty answer to the next prompt (``readLine(fd:)``).
                skipLF = byte == 0x0D
                break reading
            case .cancelled:
                _ = line.finish()
                throw ConsoleError(
                    .usage, code: "cancelled", "Cancelled at the hidden prompt (Ctrl-C); nothing was read.")
            case .tooLong:
                _ = line.finish()
                throw ConsoleError(
                    .invalidInput, code: "secret_too_long",
                    "The hidden input is over \(SecretLine.maxBytes / 1024) KiB; nothing was read.")
            }
        }
        return line.finish()
    }

    /// Secrets piped on stdin: everything up to EOF.
    static func readAllOrLine(fd: Int32) -> [UInt8]? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        for i in buffer.indices { buffer[i] = 0 }
        return bytes
    }
}

extension Terminal {
    /// The terminal's modes before the hidden prompt changed them (``HiddenPromptStop``).
    nonisolated(unsafe) fileprivate static var modesBeforeHidden = termios()
}

/// SIGTERM or SIGHUP at a hidden prompt: nothing is in flight (the secret is not read yet),
/// so the process ends at once with 128 + the signal, the terminal's modes put back (echo on)
/// and one line saying so.
enum HiddenPromptStop {
    static let signals = [SIGTERM, SIGHUP]

    /// The lines the handler writes, made once before it can first run: it allocates nothing,
    /// and reads them without reference counting.
    nonisolated(unsafe) private static var termLine = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
    nonisolated(unsafe) private static var hangUpLine = UnsafeBufferPointer<UInt8>(start: nil, count: 0)

    /// The handler: async-signal-safe (`tcsetattr`, `write`, `_exit`).
    static let handler: @convention(c) (Int32) -> Void = { signal in
        tcsetattr(STDIN_FILENO, TCSANOW, &Terminal.modesBeforeHidden)
        let line = signal == SIGHUP ? hangUpLine : termLine
        _ = write(STDERR_FILENO, line.baseAddress, line.count)
        _exit(128 + signal)
    }

    /// Takes both signals for the prompt; returns what handled them before.
    static func install() -> [sigaction] {
        if termLine.baseAddress == nil {
            termLine = UnsafeBufferPointer(copying: line("SIGTERM"))
            hangUpLine = UnsafeBufferPointer(copying: line("SIGHUP"))
        }
        return signals.map { signal in
            var action = sigaction()
            action.__sigaction_handler.sa_handler = handler
            sigemptyset(&action.sa_mask)
            var previous = sigaction()
            sigaction(signal, &action, &previous)
            return previous
        }
    }

    /// Hands the signals back to what handled them before ``install()``.
    static func restore(_ previous: [sigaction]) {
        for (signal, action) in zip(signals, previous) {
            var action = action
            sigaction(signal, &action, nil)
        }
    }

    static func line(_ name: String) -> [UInt8] {
        Array("\nerror[interrupted]: \(name) arrived at the hidden prompt; it ended without reading anything.\n".utf8)
    }
}

/// The keys of a hidden prompt (``Terminal/readSecret(prompt:)``), one byte at a time, with the
/// terminal's own line editing and signals off.
struct SecretLine {
    enum Step { case more, done, cancelled, tooLong }
    /// As `--root-key-file` and the secret files.
    static let maxBytes = 64 << 10
    private(set) var bytes: [UInt8] = []
    /// Braces open outside a string, once the secret began with `{`.
    private var depth = 0
    private var inString = false
    private var escaped = false

    mutating func take(_ byte: UInt8) -> Step {
        switch byte {
        case 0x03: return .cancelled  // Ctrl-C
        case 0x04: return .done  // Ctrl-D
        case 0x1A, 0x1C: return .more  // Ctrl-Z, Ctrl-\: nothing to suspend or quit here
        case 0x7F, 0x08:  // Backspace: one character, all its UTF-8 bytes
            if !bytes.isEmpty { unread() }
            return .more
        case 0x15:  // Ctrl-U: start over
            wipe()
            return .more
        case 0x0A, 0x0D:
            // Enter ends the secret, unless nothing is typed yet (an empty line before a paste
            // would end it and leave the key for the visible prompt after it) or a JSON object
            // is still open: its lines go on.
            guard depth == 0, bytes.contains(where: { !Self.isSpace($0) }) else {
                if !bytes.isEmpty { bytes.append(0x0A) }
                return .more
            }
            return .done
        default:
            guard bytes.count < Self.maxBytes else { return .tooLong }
            bytes.append(byte)
            read(byte)
            return .more
        }
    }

    /// Whether the secret began with `{`.
    private var isObject: Bool { bytes.first(where: { !Self.isSpace($0) }) == UInt8(ascii: "{") }

    /// The secret, with the bytes kept wiped.
    mutating func finish() -> [UInt8] {
        defer { wipe() }
        return bytes
    }

    private mutating func wipe() {
        for i in bytes.indices { bytes[i] = 0 }
        bytes.removeAll()
        depth = 0
        inString = false
        escaped = false
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A }

    /// Tracks the braces of a JSON object as it is typed.
    private mutating func read(_ byte: UInt8) {
        guard isObject else { return }
        if inString {
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inString = false
            }
            return
        }
        switch byte {
        case UInt8(ascii: "\""): inString = true
        case UInt8(ascii: "{"): depth += 1
        case UInt8(ascii: "}"): depth = max(0, depth - 1)
        default: break
        }
    }

    /// A Backspace: the last byte goes, and the brace count is rebuilt from what is left
    /// (secrets are short).
    private mutating func unread() {
        var kept = bytes
        // UTF-8 continuation bytes (10xxxxxx) go with their lead byte.
        while let last = kept.popLast(), last & 0xC0 == 0x80 {}
        wipe()
        for byte in kept {
            bytes.append(byte)
            read(byte)
        }
        for i in kept.indices { kept[i] = 0 }
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// A copy of `bytes` that is never freed (for a signal handler to read).
    init(copying bytes: [UInt8]) {
        let storage = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: bytes.count)
        _ = storage.initialize(from: bytes)
        self.init(storage)
    }
}
