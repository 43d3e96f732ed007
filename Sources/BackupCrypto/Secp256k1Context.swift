import BackupModel
internal import CSecp256k1

/// The one libsecp256k1 context the process shares.
///
/// Created with `SECP256K1_CONTEXT_NONE` (0.2 needs no sign/verify flags) and randomized once
/// for side-channel blinding; after that it is only read, which libsecp256k1 documents as safe
/// from any thread. It lives for the whole process, so it is never destroyed.
final class Secp256k1Context: @unchecked Sendable {
    static let shared = Secp256k1Context()

    // Read-only after init.
    let pointer: OpaquePointer

    private init() {
        guard let context = secp256k1_context_create(UInt32(SECP256K1_CONTEXT_NONE)) else {
            // Only a failed allocation makes this nil, and libsecp256k1 aborts on that itself.
            preconditionFailure("libsecp256k1 could not create a context")
        }
        let seed = SystemRandom().secretBytes(32)
        let randomized = seed.withUnsafeBytes { bytes in
            secp256k1_context_randomize(context, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self))
        }
        // Returns 0 only for the static context; a failure would leave it valid but unblinded.
        assert(randomized == 1, "secp256k1_context_randomize failed")
        pointer = context
    }
}
