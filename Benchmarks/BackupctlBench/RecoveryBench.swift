import Access
import BackupCrypto
import BackupModel
import BackupService
import BackupServiceSandbox
import COpenSSL
import CSecp256k1
import ConsoleStore
import Foundation
import Recovery
import SQLiteStore

/// Recovery's cost beside the C calls it wraps: Backup Account ID derivations per second vs
/// raw `EVP_MAC` BLAKE2BMAC + `secp256k1_ec_pubkey_create` + serialize, and `reset complete`
/// signature verification latency vs a raw `secp256k1_ecdsa_verify`, plus the whole
/// `complete` (checks, one SQLite write transaction, audit) for scale.
struct RecoveryBench: BenchSuite {
    let name = "recovery"

    func run(_ scale: BenchScale) async throws -> [String: BenchValue] {
        let derivations = scale.pick(20_000, quick: 500)
        let rng = SeededRandom(seed: 1)
        let keys = (0..<derivations).map { _ in RootKey(version: .v1, secret: rng.secretBytes(32)) }
        let raw = keys.map { key in key.secret.withUnsafeBytes { Array($0) } }

        let swiftSeconds = try timeSeconds {
            for key in keys { _ = try BackupAccountKey.derive(rootKey: key) }
        }
        let context = try RawC.context()
        let cSeconds = try timeSeconds {
            for bytes in raw { _ = try RawC.deriveID(bytes, context: context) }
        }
        // Both paths agree (the reference is a reference, not a different function).
        let viaSwift = try BackupAccountKey.derive(rootKey: keys[0]).publicKey
        let viaC = try RawC.deriveID(raw[0], context: context)
        precondition(viaSwift == viaC, "the raw C reference must compute the same ID")

        // Verification: the service's checks (base64, DER, key parse, SHA-256, verify) vs the bare call.
        let verifications = scale.pick(20_000, quick: 500)
        let rootKey = keys[0]
        let id = try BackupAccountKey.derive(rootKey: rootKey)
        let challenge = rng.bytes(32)
        let signature = try UserRecovery.signChallenge(challenge, rootKey: rootKey)
        var service = Samples()
        for _ in 0..<verifications {
            let start = nowNanos()
            try ResetService.verify(signature: signature, challenge: challenge, publicKey: id.publicKey)
            service.add(nowNanos() - start)
        }
        let der = Base64.decode(signature, alphabet: .standard) ?? []
        let digest = SHA256.hash(challenge)
        var parsedSignature = secp256k1_ecdsa_signature()
        var parsedKey = secp256k1_pubkey()
        let publicKey = id.publicKey
        guard secp256k1_ecdsa_signature_parse_der(context, &parsedSignature, der, der.count) == 1,
            secp256k1_ec_pubkey_parse(context, &parsedKey, publicKey, publicKey.count) == 1
        else { throw ConsoleError.internalError("bench setup: parse failed") }
        var bare = Samples()
        for _ in 0..<verifications {
            let start = nowNanos()
            let ok = secp256k1_ecdsa_verify(context, &parsedSignature, digest, &parsedKey)
            bare.add(nowNanos() - start)
            precondition(ok == 1)
        }

        let full = try await completeLatency(scale.pick(300, quick: 20))
        return [
            "deriveIdsPerSecond": .number(Double(derivations) / swiftSeconds),
            "referenceRawCDerivesPerSecond": .number(Double(derivations) / cSeconds),
            "deriveVsRawCRatio": .number(swiftSeconds / cSeconds),
            "verifyMedianMicros": .number(service.medianMicros),
            "verifyP99Micros": .number(service.p99Micros),
            "referenceSecp256k1VerifyMedianMicros": .number(bare.medianMicros),
            "referenceSecp256k1VerifyP99Micros": .number(bare.p99Micros),
            "verifyVsRawMedianRatio": .number(service.medianMicros / max(bare.medianMicros, 0.001)),
            "resetCompleteMedianMicros": .number(full.medianMicros),
            "resetCompleteP99Micros": .number(full.p99Micros),
            "resetCompleteRuns": .integer(full.values.count),
        ]
    }

    /// `begin` untimed, then `complete` timed, on a real SQLite store, one fresh backup each,
    /// through the sandbox Backup Service over loopback HTTP (the path every tenant takes).
    private func completeLatency(_ runs: Int) async throws -> Samples {
        let directory = scratchDirectory("recovery")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteConsoleStore(path: directory.appendingPathComponent("c.db").path)
        let access = AccessService(store: store)
        let op = try await access.authenticate(token: try await access.bootstrap(admin: try OperatorName("bench")))
        let session = try await access.session(operator: op, tenant: try TenantName("sandbox"))
        let server = try await BackupServiceSandboxServer.start(
            BackupServiceEmulator.sandbox(store: store, tenant: session.tenantName))
        defer { Task { await server.stop() } }
        let service = ResetService(store: store, service: try BackupServiceClient(baseURL: server.baseURL))
        let rng = SeededRandom(seed: 2)
        var samples = Samples()
        for _ in 0..<runs {
            let key = RootKey(version: .v1, secret: Secp256k1.generateSecretKey(using: rng))
            let id = try BackupAccountKey.derive(rootKey: key)
            let metadata = BackupMetadata(
                id: id.rawValue, manifestHash: Hex.encode(rng.bytes(32)),
                factors: [
                    Factor(
                        id: rng.uuid(), createdAt: Timestamp(seconds: 1),
                        kind: .passkey(
                            PasskeyFactor(
                                credentialId: Base64.encode(rng.bytes(16), alphabet: .url, padding: false), label: nil))
                    )
                ],
                syncFactors: [],
                keys: [
                    .turnkey(
                        TurnkeyKey(
                            encryptedKey: "00", turnkeyAccountId: rng.uuid(), turnkeyUserId: rng.uuid(),
                            turnkeyPrivateKeyId: rng.uuid()))
                ])
            let blob = Data(rng.bytes(1024))
            try await store.writeBackup(
                tenant: session.tenantName,
                BackupWrite(
                    record: BackupRecord(
                        backupId: id.rawValue, metadata: metadata, blobSize: blob.count, blobSHA256: SHA256.hex(blob),
                        importedAt: 1, updatedAt: 1),
                    blob: blob,
                    lookupRows: metadata.lookupKeys.map { LookupRow(pk: $0.rawValue, backupId: id.rawValue) }),
                audit: session.audit("bench.write"))
            let begun = try await service.begin(backupAccountId: id.rawValue, session: session)
            let signature = try UserRecovery.signChallenge(begun.challenge, rootKey: key)
            let start = nowNanos()
            _ = try await service.complete(token: begun.token, signature: signature, session: session)
            samples.add(nowNanos() - start)
        }
        return samples
    }
}

/// The C calls `BackupAccountKey.derive` wraps, made directly.
private enum RawC {
    static func context() throws -> OpaquePointer {
        guard let context = secp256k1_context_create(UInt32(SECP256K1_CONTEXT_NONE)) else {
            throw ConsoleError.internalError("secp256k1_context_create failed")
        }
        return context
    }

    static func name(_ s: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// BLAKE2BMAC(key = material, salt = LE64(0x101) ‖ 0⁸, custom = "OXIDEKEY" ‖ 0⁸, size 32) → pubkey → compressed.
    static func deriveID(_ material: [UInt8], context: OpaquePointer) throws -> [UInt8] {
        guard let mac = EVP_MAC_fetch(nil, "BLAKE2BMAC", nil) else { throw ConsoleError.internalError("fetch") }
        defer { EVP_MAC_free(mac) }
        guard let ctx = EVP_MAC_CTX_new(mac) else { throw ConsoleError.internalError("ctx") }
        defer { EVP_MAC_CTX_free(ctx) }
        var key = material
        var salt: [UInt8] = [0x01, 0x01, 0, 0, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 8)
        var custom: [UInt8] = Array("OXIDEKEY".utf8) + [UInt8](repeating: 0, count: 8)
        var size = 32
        let initialized = key.withUnsafeMutableBytes { k in
            salt.withUnsafeMutableBytes { s in
                custom.withUnsafeMutableBytes { c in
                    withUnsafeMutablePointer(to: &size) { z in
                        var params = [
                            OSSL_PARAM_construct_octet_string(name("key"), k.baseAddress, k.count),
                            OSSL_PARAM_construct_octet_string(name("salt"), s.baseAddress, s.count),
                            OSSL_PARAM_construct_octet_string(name("custom"), c.baseAddress, c.count),
                            OSSL_PARAM_construct_size_t(name("size"), z),
                            OSSL_PARAM_construct_end(),
                        ]
                        return EVP_MAC_init(ctx, nil, 0, &params)
                    }
                }
            }
        }
        var subkey = [UInt8](repeating: 0, count: 32)
        var written = 0
        guard initialized == 1, EVP_MAC_final(ctx, &subkey, &written, 32) == 1, written == 32 else {
            throw ConsoleError.internalError("mac")
        }
        var point = secp256k1_pubkey()
        guard secp256k1_ec_seckey_verify(context, subkey) == 1, secp256k1_ec_pubkey_create(context, &point, subkey) == 1
        else { throw ConsoleError.internalError("pubkey") }
        var out = [UInt8](repeating: 0, count: 33)
        var length = 33
        guard secp256k1_ec_pubkey_serialize(context, &out, &length, &point, UInt32(SECP256K1_EC_COMPRESSED)) == 1 else {
            throw ConsoleError.internalError("serialize")
        }
        return out
    }
}
