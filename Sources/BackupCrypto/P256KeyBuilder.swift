import BackupModel
internal import COpenSSL

/// Builds P-256 `EVP_PKEY`s from raw key material with `EVP_PKEY_fromdata`, and checks ECDSA
/// DER strictly.
///
/// OpenSSL 3 deprecates `EC_KEY`; the provider interface takes the group name, the public
/// point and the private scalar as `OSSL_PARAM`s instead.
enum P256KeyBuilder {
    /// A key pair for signing; `scalar` stays owned by the caller.
    static func keyPair(scalar: OpaquePointer, publicKey: [UInt8]) throws(ConsoleError) -> OpaquePointer {
        try build(publicKey: publicKey, scalar: scalar)
    }

    /// A public key for verifying, from 65-byte uncompressed SEC1 bytes already on the curve.
    static func publicKey(_ uncompressed: [UInt8]) throws(ConsoleError) -> OpaquePointer {
        try build(publicKey: uncompressed, scalar: nil)
    }

    private static func build(publicKey: [UInt8], scalar: OpaquePointer?) throws(ConsoleError) -> OpaquePointer {
        guard let builder = OSSL_PARAM_BLD_new() else { throw OpenSSLSupport.failure("OSSL_PARAM_BLD_new") }
        defer { OSSL_PARAM_BLD_free(builder) }
        // The builder keeps the name pointers (static strings) and reads the public-key bytes
        // and the scalar only in OSSL_PARAM_BLD_to_param, so both stay alive until then.
        let params: UnsafeMutablePointer<OSSL_PARAM>? = publicKey.withUnsafeBytes { pub in
            guard
                OSSL_PARAM_BLD_push_utf8_string(
                    builder, OpenSSLSupport.cString("group"), OpenSSLSupport.cString("prime256v1"), 0) == 1,
                OSSL_PARAM_BLD_push_octet_string(
                    builder, OpenSSLSupport.cString("pub"), pub.baseAddress, pub.count) == 1
            else { return nil }
            if let scalar {
                guard OSSL_PARAM_BLD_push_BN(builder, OpenSSLSupport.cString("priv"), scalar) == 1 else {
                    return nil
                }
            }
            return OSSL_PARAM_BLD_to_param(builder)
        }
        guard let params else { throw OpenSSLSupport.failure("OSSL_PARAM_BLD for a P-256 key") }
        // The private scalar sits in the secure part of the block, which OSSL_PARAM_free clears.
        defer { OSSL_PARAM_free(params) }

        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw OpenSSLSupport.failure("EVP_PKEY_CTX_new_from_name(EC)")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_fromdata_init(context) == 1 else { throw OpenSSLSupport.failure("EVP_PKEY_fromdata_init") }
        var key: OpaquePointer?
        // EVP_PKEY_PUBLIC_KEY / EVP_PKEY_KEYPAIR, spelled out: Swift does not import those macros.
        let publicSelection = OSSL_KEYMGMT_SELECT_ALL_PARAMETERS | OSSL_KEYMGMT_SELECT_PUBLIC_KEY
        let selection = scalar == nil ? publicSelection : publicSelection | OSSL_KEYMGMT_SELECT_PRIVATE_KEY
        guard EVP_PKEY_fromdata(context, &key, selection, params) == 1, let key else {
            throw OpenSSLSupport.failure("EVP_PKEY_fromdata")
        }
        return key
    }

    /// Whether `der` is one DER `ECDSA-Sig-Value` with nothing after it and in canonical form
    /// (decoding and re-encoding gives the same bytes).
    static func isStrictDER(_ der: [UInt8]) -> Bool {
        guard !der.isEmpty, der.count <= 1024 else { return false }
        return der.withUnsafeBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            var cursor: UnsafePointer<UInt8>? = base
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, buffer.count) else {
                ERR_clear_error()
                return false
            }
            defer { ECDSA_SIG_free(signature) }
            guard let cursor, cursor - base == buffer.count else { return false }
            let length = i2d_ECDSA_SIG(signature, nil)
            guard length == buffer.count else { return false }
            var encoded = [UInt8](repeating: 0, count: Int(length))
            let written = encoded.withUnsafeMutableBufferPointer { out -> Int32 in
                var outCursor = out.baseAddress
                return i2d_ECDSA_SIG(signature, &outCursor)
            }
            return written == length && encoded == der
        }
    }
}
