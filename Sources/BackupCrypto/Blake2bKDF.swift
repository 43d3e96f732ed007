import BackupModel
internal import COpenSSL

/// libsodium's `crypto_kdf_derive_from_key`, computed with OpenSSL's `BLAKE2BMAC`.
///
/// libsodium's KDF is keyed BLAKE2b over an empty message with the subkey id (little-endian, 8
/// bytes, then 8 zero bytes) as the salt and the context (8 bytes, then 8 zero bytes) as the
/// personalisation. OpenSSL 3 exposes exactly those parameters, so no libsodium dependency is
/// needed; the facts' vectors pin the equivalence.
enum Blake2bKDF {
    /// Derives `length` bytes (16–64) for `subkeyID` and the 8-byte `context` from `key` (16–64 bytes).
    /// - Throws: ``ConsoleError`` `internal_error` if OpenSSL refuses (bad sizes, no BLAKE2BMAC).
    static func derive(
        length: Int, subkeyID: UInt64, context: StaticString, key: SecretBytes
    ) throws(ConsoleError) -> SecretBytes {
        guard (16...64).contains(length), (16...64).contains(key.count), context.utf8CodeUnitCount == 8 else {
            throw .internalError("The BLAKE2b KDF was called with out-of-range sizes.")
        }
        guard let mac = EVP_MAC_fetch(nil, "BLAKE2BMAC", nil) else {
            throw failure("OpenSSL has no BLAKE2BMAC")
        }
        defer { EVP_MAC_free(mac) }
        guard let ctx = EVP_MAC_CTX_new(mac) else { throw failure("EVP_MAC_CTX_new failed") }
        defer { EVP_MAC_CTX_free(ctx) }

        var salt = [UInt8](repeating: 0, count: 16)
        withUnsafeBytes(of: subkeyID.littleEndian) { salt.replaceSubrange(0..<8, with: $0) }
        var custom = [UInt8](repeating: 0, count: 16)
        custom.replaceSubrange(0..<8, with: UnsafeBufferPointer(start: context.utf8Start, count: 8))
        var size = length

        // OSSL_PARAM keeps raw pointers to names and buffers: everything stays in scope until
        // EVP_MAC_init has returned. The names are static C strings.
        let initialized = key.withUnsafeBytes { keyBytes in
            salt.withUnsafeMutableBytes { saltBytes in
                custom.withUnsafeMutableBytes { customBytes in
                    withUnsafeMutablePointer(to: &size) { sizePointer in
                        var params = [
                            OSSL_PARAM_construct_octet_string(
                                name("key"), UnsafeMutableRawPointer(mutating: keyBytes.baseAddress), keyBytes.count),
                            OSSL_PARAM_construct_octet_string(name("salt"), saltBytes.baseAddress, saltBytes.count),
                            OSSL_PARAM_construct_octet_string(
                                name("custom"), customBytes.baseAddress, customBytes.count),
                            OSSL_PARAM_construct_size_t(name("size"), sizePointer),
                            OSSL_PARAM_construct_end(),
                        ]
                        return EVP_MAC_init(ctx, nil, 0, &params)
                    }
                }
            }
        }
        guard initialized == 1 else { throw failure("EVP_MAC_init failed") }

        var written = 0
        let finished = SecretBytes(count: length) { output in
            let rc = EVP_MAC_final(ctx, output.baseAddress?.assumingMemoryBound(to: UInt8.self), &written, length)
            if rc != 1 { written = -1 }
        }
        guard written == length else { throw failure("EVP_MAC_final failed") }
        return finished
    }

    private static func name(_ text: StaticString) -> UnsafePointer<CChar> {
        OpenSSLSupport.cString(text)
    }

    private static func failure(_ what: String) -> ConsoleError {
        OpenSSLSupport.failure("key derivation: \(what)")
    }
}
