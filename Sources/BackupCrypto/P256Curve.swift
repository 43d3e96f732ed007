import BackupModel
internal import COpenSSL

/// The P-256 group, built once per process: `EC_GROUP_new_by_curve_name` costs more than the
/// point check it serves, and write-time validation of device keys runs it millions of times.
///
/// The group is never mutated after creation (no `EC_GROUP_precompute_mult`, no setters), and
/// OpenSSL's point and scalar functions take it as `const`, so threads may share it.
private final class SharedP256Group: @unchecked Sendable {
    static let shared = SharedP256Group()
    let group: OpaquePointer?

    private init() { group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) }
}

/// The shared P-256 group and a big-number context for one operation.
///
/// Uses `EC_GROUP`/`EC_POINT`/`BIGNUM`, which OpenSSL 3 keeps undeprecated, for the point and
/// scalar arithmetic that the EVP interface does not expose (range checks, point conversion).
/// Not shared between threads: each call makes its own (the group inside is shared).
final class P256Curve {
    let group: OpaquePointer
    let bnContext: OpaquePointer

    /// - Parameter secure: a secure-heap context, for operations on private keys; public-key
    ///   checks do not need one.
    init(secure: Bool = true) throws(ConsoleError) {
        guard let group = SharedP256Group.shared.group else {
            throw OpenSSLSupport.failure("EC_GROUP_new_by_curve_name(P-256)")
        }
        guard let bnContext = secure ? BN_CTX_secure_new() : BN_CTX_new() else {
            throw OpenSSLSupport.failure("BN_CTX_new")
        }
        self.group = group
        self.bnContext = bnContext
    }

    deinit { BN_CTX_free(bnContext) }

    /// The private key as a constant-time, secure-heap `BIGNUM` if it is 32 bytes in `[1, n-1]`;
    /// the caller frees it with `BN_clear_free`.
    func scalar(_ key: SecretBytes) -> OpaquePointer? {
        guard key.count == 32, let order = EC_GROUP_get0_order(group), let bn = BN_secure_new() else {
            return nil
        }
        BN_set_flags(bn, BN_FLG_CONSTTIME)
        let read = key.withUnsafeBytes { bytes in
            BN_bin2bn(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), 32, bn)
        }
        guard read != nil, BN_is_zero(bn) == 0, BN_cmp(bn, order) < 0 else {
            BN_clear_free(bn)
            return nil
        }
        return bn
    }

    /// The SEC1 bytes as a point on the curve, or nil; the caller frees it with `EC_POINT_free`.
    ///
    /// Only 33 bytes starting 02/03 and 65 starting 04; OpenSSL would also take the hybrid
    /// 06/07 form and the 1-byte point at infinity, neither of which is a usable public key.
    func point(_ bytes: [UInt8]) -> OpaquePointer? {
        switch (bytes.count, bytes.first) {
        case (33, 0x02), (33, 0x03), (65, 0x04): break
        default: return nil
        }
        guard let point = EC_POINT_new(group) else { return nil }
        guard EC_POINT_oct2point(group, point, bytes, bytes.count, bnContext) == 1,
            EC_POINT_is_on_curve(group, point, bnContext) == 1,
            EC_POINT_is_at_infinity(group, point) == 0
        else {
            EC_POINT_free(point)
            ERR_clear_error()
            return nil
        }
        return point
    }

    /// `scalar · G`; the caller frees it with `EC_POINT_free`.
    func publicPoint(_ scalar: OpaquePointer) throws(ConsoleError) -> OpaquePointer {
        guard let point = EC_POINT_new(group) else { throw OpenSSLSupport.failure("EC_POINT_new") }
        guard EC_POINT_mul(group, point, scalar, nil, nil, bnContext) == 1 else {
            EC_POINT_free(point)
            throw OpenSSLSupport.failure("EC_POINT_mul")
        }
        return point
    }

    /// SEC1 bytes of `point`: 33 compressed or 65 uncompressed.
    func encode(_ point: OpaquePointer, compressed: Bool) throws(ConsoleError) -> [UInt8] {
        let form = compressed ? POINT_CONVERSION_COMPRESSED : POINT_CONVERSION_UNCOMPRESSED
        var output = [UInt8](repeating: 0, count: compressed ? 33 : 65)
        let written = EC_POINT_point2oct(group, point, form, &output, output.count, bnContext)
        guard written == output.count else { throw OpenSSLSupport.failure("EC_POINT_point2oct") }
        return output
    }

    /// Re-encodes valid SEC1 bytes in the other (or the same) form.
    /// - Throws: ``ConsoleError`` `invalid_public_key` when the bytes are not a point on P-256.
    func convert(_ bytes: [UInt8], compressed: Bool) throws(ConsoleError) -> [UInt8] {
        guard let point = point(bytes) else {
            throw .invalid(
                "invalid_public_key",
                "Invalid P-256 public key: expected 33 (compressed) or 65 (uncompressed) SEC1 bytes of a point on the curve, got \(bytes.count) bytes that are not."
            )
        }
        defer { EC_POINT_free(point) }
        return try encode(point, compressed: compressed)
    }
}
