import BackupModel
internal import COpenSSL

/// Small helpers shared by the OpenSSL-backed code.
enum OpenSSLSupport {
    /// A C string with static lifetime, for `OSSL_PARAM` names and values that OpenSSL keeps
    /// pointers to after the call returns (a bridged Swift `String` would dangle).
    static func cString(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// An `internal_error` naming the failed step, after discarding OpenSSL's error queue so a
    /// stale entry cannot leak into a later, unrelated failure.
    static func failure(_ what: String) -> ConsoleError {
        ERR_clear_error()
        return .internalError("OpenSSL failed: \(what).")
    }
}
