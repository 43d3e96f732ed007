/// The outcome of checking a signature, fine-grained enough to pick the right error code.
///
/// The Backup Service distinguishes `invalid_signature` (not DER) from
/// `signature_verification_error` (well-formed but wrong); callers map these cases the same way.
public enum SignatureCheck: Sendable, Equatable {
    /// The signature is valid for the digest or message and the public key.
    case valid
    /// The signature is not strict DER.
    case malformedSignature
    /// The public key is not a point on the curve in SEC1 form.
    case malformedPublicKey
    /// Well-formed, but it does not verify (wrong key, wrong message, or a high-S secp256k1 signature).
    case mismatch
}
