/// Which of the Backup Service's two JSON shapes to write.
public enum MetadataForm: Sendable {
    /// What the service keeps in S3: passkeys as `webauthnCredential` (webauthn-rs `Passkey`),
    /// OIDC accounts with their `sub`, `createdAt` as RFC 3339.
    case stored
    /// What the service sends to clients: passkeys as `credentialId`, `createdAt` as unix seconds.
    case exported

    public static let userInfoKey: CodingUserInfoKey = {
        guard let key = CodingUserInfoKey(rawValue: "backupctl.metadataForm") else {
            preconditionFailure("a non-empty raw value always makes a CodingUserInfoKey")
        }
        return key
    }()
}

extension Encoder {
    var metadataForm: MetadataForm {
        userInfo[MetadataForm.userInfoKey] as? MetadataForm ?? .stored
    }
}
