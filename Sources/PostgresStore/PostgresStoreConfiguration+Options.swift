import BackupModel
import Foundation

extension PostgresStoreConfiguration {
    /// The query parameters of a database URL, each at most once.
    struct Options {
        var sslMode: SSLMode?
        var sslRootCert: String?
        var applicationName: String?
        var poolSize: Int?
        var queryTimeoutSeconds: Int?
        var passFile: String?
    }

    /// Reads the query parameters; anything else (a typo, `password=`) is refused rather than ignored.
    static func options(
        _ items: [URLQueryItem], bad: (String) -> ConsoleError
    ) throws(ConsoleError) -> Options {
        var options = Options()
        var seen = Set<String>()
        for item in items {
            guard seen.insert(item.name).inserted else { throw bad("gives \(item.name) twice") }
            guard let value = item.value, !value.isEmpty else { throw bad("gives \(item.name) no value") }
            switch item.name {
            case "sslmode":
                guard let mode = SSLMode(rawValue: value) else {
                    throw bad("has sslmode=\(value); use disable, require or verify-full")
                }
                options.sslMode = mode
            case "sslrootcert":
                options.sslRootCert = value
            case "passfile":
                options.passFile = value
            case "application_name":
                guard value.utf8.count <= 63, value.unicodeScalars.allSatisfy({ $0.isASCII && $0.value >= 0x20 })
                else { throw bad("has an application_name that is not printable ASCII of at most 63 bytes") }
                options.applicationName = value
            case "pool_size":
                guard let size = Int(value), (1...maxPoolSize).contains(size) else {
                    throw bad("has a pool_size that is not a number from 1 to \(maxPoolSize)")
                }
                options.poolSize = size
            case "query_timeout":
                guard let seconds = Int(value), (0...maxQueryTimeoutSeconds).contains(seconds) else {
                    throw bad("has a query_timeout that is not a number of seconds from 0 to \(maxQueryTimeoutSeconds)")
                }
                options.queryTimeoutSeconds = seconds
            case "password":
                throw bad("gives a password parameter; put it in the URL's user part, PGPASSWORD or a passfile")
            default:
                throw bad(
                    "has an unknown parameter \(item.name) (known: sslmode, sslrootcert, passfile, "
                        + "application_name, pool_size, query_timeout)")
            }
        }
        return options
    }
}

/// libpq's password file: lines `host:port:database:user:password`, `*` matching anything, `\:` and
/// `\\` escaped, `#` comments; the first matching line wins.
enum PassFile {
    /// The password for this connection from `explicit` (`passfile=`), else `PGPASSFILE`, else
    /// `~/.pgpass` when it exists; `nil` when no line matches.
    /// - Throws: ``ConsoleError`` `usage` when a named file cannot be read, or when the file is
    ///   readable by group or others (libpq ignores such a file; we refuse it so nothing is silent).
    static func password(
        explicit: String?, environment: [String: String],
        host: String, port: Int, database: String, user: String
    ) throws(ConsoleError) -> String? {
        let path: String
        if let named = explicit ?? environment["PGPASSFILE"] {
            path = named
        } else if let home = environment["HOME"], FileManager.default.fileExists(atPath: home + "/.pgpass") {
            path = home + "/.pgpass"
        } else {
            return nil
        }
        let text: String
        do {
            text = String(
                decoding: try InputFile.read(path, what: "The PostgreSQL password file", maxBytes: 1 << 20),
                as: UTF8.self)
        } catch {
            throw ConsoleError(
                .configuration, code: "invalid_config",
                "Cannot read the PostgreSQL password file \(path) (missing, unreadable or not a regular file).")
        }
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        guard let mode = (attributes?[.posixPermissions] as? NSNumber)?.intValue, mode & 0o077 == 0 else {
            throw ConsoleError(
                .configuration, code: "insecure_config",
                "The PostgreSQL password file \(path) is readable by others; chmod 600 it.")
        }
        let wanted = [host, String(port), database, user]
        for line in text.split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
            let fields = split(line)
            guard fields.count == 5 else { continue }
            if zip(fields.prefix(4), wanted).allSatisfy({ $0 == "*" || $0 == $1 }) { return fields[4] }
        }
        return nil
    }

    /// Splits one line at unescaped `:`, removing the escapes.
    static func split(_ line: Substring) -> [String] {
        var fields = [""]
        var escaped = false
        for character in line {
            if escaped {
                fields[fields.count - 1].append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ":" {
                fields.append("")
            } else {
                fields[fields.count - 1].append(character)
            }
        }
        return fields
    }
}
