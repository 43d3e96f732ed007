import BackupModel

extension LookupQuery {
    /// What a user says they still know, as one line: a Backup Account ID, or
    /// `passkey ID`, `google SUB`, `apple SUB`, `oidc ISSUER SUB`, `keypair KEY [--sync]`.
    /// The walkthrough's "find" step reads it, so it finds backups by the rules `lookup` uses.
    /// - Throws: ``ConsoleError`` `invalid_query` naming the forms it accepts.
    public init(text: String) throws(ConsoleError) {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard let first = words.first else { throw Self.badQuery("nothing was given") }
        if first.hasPrefix(BackupAccountID.prefix), words.count == 1 {
            self = .account(first)
            return
        }
        switch (first.lowercased(), words.count) {
        case ("passkey", 2): self = .passkey(credentialId: words[1])
        case ("google", 2), ("apple", 2): self = .oidc(provider: first.lowercased(), sub: words[1])
        case ("oidc", 3): self = .oidc(provider: words[1], sub: words[2])
        case ("keypair", 2): self = .keypair(publicKey: words[1], sync: false)
        case ("keypair", 3) where words[2] == "--sync": self = .keypair(publicKey: words[1], sync: true)
        default:
            throw Self.badQuery(
                "\(SecretShape.quoted(first, limit: 24)) with \(words.count - 1) more word(s) is none of them")
        }
    }

    static func badQuery(_ why: String) -> ConsoleError {
        .invalid(
            "invalid_query",
            "Give a Backup Account ID, or one of: passkey ID, google SUB, apple SUB, oidc ISSUER SUB, keypair KEY [--sync] (\(why))."
        )
    }
}
