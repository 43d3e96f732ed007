import Foundation

/// What a service asks the audit log to record; the store adds sequence, time and hashes in
/// the same transaction as the change it describes.
public struct AuditDraft: Sendable, Equatable {
    public var operatorName: String
    public var tenant: String?
    /// Dotted verb, e.g. `backup.show`, `reset.complete`, `operator.grant`.
    public var action: String
    /// What was acted on (a backup id, an operator, a sub-org id); never a secret.
    public var target: String?
    public var details: [String: String]

    public init(
        operatorName: String, tenant: String?, action: String, target: String? = nil,
        details: [String: String] = [:]
    ) {
        self.operatorName = operatorName
        self.tenant = tenant
        self.action = action
        self.target = target
        self.details = details
    }

    /// The draft as the store writes it: while `backupctl serve` answers a request, the entry
    /// names it (`requestId`, the answer's X-Request-Id). Stores call it where they insert.
    public var stamped: AuditDraft {
        guard let request = ServedRequest.id, details["requestId"] == nil else { return self }
        var draft = self
        draft.details["requestId"] = request
        return draft
    }
}

/// The request a server task is answering, so what it logs and audits can name it.
public enum ServedRequest {
    /// The request's id (`X-Request-Id`, the caller's or one the server made); `nil` outside a request.
    @TaskLocal public static var id: String?
}

/// One entry of the hash-chained audit log: `hash = SHA-256(prevHash ‖ canonical)`, where
/// `canonical` is ``canonicalBytes``, and the first entry's `prevHash` is 64 zeros.
public struct AuditEntry: Sendable, Equatable, Codable {
    public static let genesisHash = String(repeating: "0", count: 64)

    public var seq: Int64
    /// Unix milliseconds (RFC 3339 with milliseconds in JSON).
    @UTCMillis public var at: Int64
    public var operatorName: String
    public var tenant: String?
    public var action: String
    public var target: String?
    public var details: [String: String]
    public var prevHash: String
    public var hash: String

    public init(seq: Int64, at: Int64, draft: AuditDraft, prevHash: String, hash: String) {
        self.seq = seq
        self.at = at
        operatorName = draft.operatorName
        tenant = draft.tenant
        action = draft.action
        target = draft.target
        details = draft.details
        self.prevHash = prevHash
        self.hash = hash
    }

    /// The bytes the hash covers: compact JSON of every field but the hashes, keys sorted.
    public var canonicalBytes: Data {
        Self.canonicalBytes(
            seq: seq, at: at, operatorName: operatorName, tenant: tenant, action: action,
            target: target, details: details)
    }

    public static func canonicalBytes(
        seq: Int64, at: Int64, operatorName: String, tenant: String?, action: String, target: String?,
        details: [String: String]
    ) -> Data {
        // Written by hand (a JSONEncoder per entry was a tenth of a scripted lookup's cost), in
        // exactly JSONEncoder's bytes so the entries written before still verify. Detail keys
        // that are not all ASCII take the encoder, whose ordering of them is its own business.
        guard let detailsJSON = CanonicalJSON.object(details) else {
            return encoderCanonicalBytes(
                seq: seq, at: at, operatorName: operatorName, tenant: tenant, action: action, target: target,
                details: details)
        }
        var out: [UInt8] = []
        out.reserveCapacity(160 + detailsJSON.count)
        appendCanonical(
            seq: seq, at: at, operatorName: operatorName, tenant: tenant, action: action, target: target,
            detailsJSON: detailsJSON, to: &out)
        return Data(out)
    }

    /// The canonical bytes appended to `out`, with `details` given as its canonical object
    /// (``CanonicalJSON/object(_:)``, which the caller also stores): the chain hashes the
    /// previous hash and these bytes from one buffer.
    public static func appendCanonical(
        seq: Int64, at: Int64, operatorName: String, tenant: String?, action: String, target: String?,
        detailsJSON: [UInt8], to out: inout [UInt8]
    ) {
        // Keys in sorted order: action, at, details, operator, seq, target, tenant.
        out.append(contentsOf: #"{"action":"#.utf8)
        CanonicalJSON.append(string: action, to: &out)
        out.append(contentsOf: #","at":"#.utf8)
        out.append(contentsOf: String(at).utf8)
        out.append(contentsOf: #","details":"#.utf8)
        out.append(contentsOf: detailsJSON)
        out.append(contentsOf: #","operator":"#.utf8)
        CanonicalJSON.append(string: operatorName, to: &out)
        out.append(contentsOf: #","seq":"#.utf8)
        out.append(contentsOf: String(seq).utf8)
        out.append(contentsOf: #","target":"#.utf8)
        CanonicalJSON.append(optional: target, to: &out)
        out.append(contentsOf: #","tenant":"#.utf8)
        CanonicalJSON.append(optional: tenant, to: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// The canonical bytes through JSONEncoder: the definition the hand-written form matches.
    package static func encoderCanonicalBytes(
        seq: Int64, at: Int64, operatorName: String, tenant: String?, action: String, target: String?,
        details: [String: String]
    ) -> Data {
        struct Canonical: Encodable {
            var seq: Int64
            var at: Int64
            var `operator`: String
            var tenant: String?
            var action: String
            var target: String?
            var details: [String: String]

            func encode(to encoder: any Encoder) throws {
                enum K: String, CodingKey { case seq, at, `operator`, tenant, action, target, details }
                var c = encoder.container(keyedBy: K.self)
                try c.encode(seq, forKey: .seq)
                try c.encode(at, forKey: .at)
                try c.encode(self.operator, forKey: .operator)
                // Explicit nulls: an absent tenant and a removed one must hash differently.
                try c.encode(tenant, forKey: .tenant)
                try c.encode(action, forKey: .action)
                try c.encode(target, forKey: .target)
                try c.encode(details, forKey: .details)
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let value = Canonical(
            seq: seq, at: at, operator: operatorName, tenant: tenant, action: action, target: target,
            details: details)
        return (try? encoder.encode(value)) ?? Data()
    }
}
