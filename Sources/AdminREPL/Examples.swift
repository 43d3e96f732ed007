/// Examples shown by `help` (the first of each) and `help COMMAND` (all of them), keyed by the
/// command's full path. `HelpTests` checks that every command of the tree has one.
enum Examples {
    static func first(_ path: String) -> String? { table[path]?.first }

    static let table: [String: [String]] = [
        "init": ["backupctl init --admin alice"],
        "demo": ["backupctl demo", "backupctl demo --fresh --backups 500"],
        "use": ["use staging"],
        "whoami": ["whoami", "backupctl --format json whoami"],
        "quit": ["quit"],
        "exit": ["exit"],
        "set": ["set format json", "\\format table", "set pager off", "set"],
        "tenant create": [
            "tenant create staging --sandbox",
            "tenant create prod --turnkey-url https://api.turnkey.com --turnkey-org ORG_ID --turnkey-api-key-file /etc/backupctl/prod-api.key --backup-service-url https://backup.example.com",
        ],
        "tenant update": [
            "tenant update prod --backup-service-url https://backup.example.com",
            "tenant update prod --clear-backup-service-url",
            "tenant update prod --retire-max-percent 5 --retire-max-count 500",
        ],
        "context add": [
            "context add prod --server https://backupctl.internal:8443 --token-file ~/.config/backupctl/prod.token --ca-file /etc/backupctl/ca.pem --tenant prod"
        ],
        "context use": ["context use prod"],
        "context list": ["context list"],
        "context remove": ["context remove staging"],
        "tenant list": ["tenant list", "backupctl --format csv tenant list"],
        "tenant delete": ["tenant delete staging", "backupctl --yes tenant delete staging"],
        "operator add": ["operator add bob --tenant prod --role support"],
        "operator grant": ["operator grant bob --tenant prod --role cleaner"],
        "operator revoke": ["operator revoke bob --tenant prod"],
        "operator list": ["operator list"],
        "operator remove": ["operator remove bob"],
        "operator token rotate": ["operator token rotate bob", "operator token rotate alice"],
        "import": [
            "import runbooks/fixtures/export --dry-run", "import runbooks/fixtures/export",
            "import /var/lib/backupctl/exports/20261122T060000Z --snapshot-at 2026-11-22T06:00:00Z --complete",
        ],
        "backups list": [
            "backups list --health fail", "backups list --factor-kind oidc --older-than 90d --limit 20",
        ],
        "seed": ["seed --backups 1000 --orphans 20", "seed --backups 1000 --seed 7"],
        "audit list": ["audit list --limit 20"],
        "audit verify": ["audit verify", "audit verify --public-key audit-key.pub"],
        "audit export": [
            "audit export --since 24h --out audit.jsonl", "backupctl audit export --since 2026-11-01 > audit.jsonl",
        ],
        "audit keygen": ["backupctl audit keygen --out /etc/backupctl/audit.key"],
        "recovery derive": ["backupctl recovery derive --root-key-file key.json"],
        "recovery sign": ["backupctl recovery sign --challenge B64 --root-key-file key.json"],
        "recovery stamp": ["backupctl recovery stamp --body-file body.json --root-key-file key.json"],
        "reset begin": [
            "reset begin backup_account_02ab… --token-out reset.token", "reset begin backup_account_02ab…",
        ],
        "reset complete": [
            "reset complete --token-file reset.token --signature-file sig.txt",
            "reset complete --token-file reset.token --signature-file - --backup-account-id backup_account_02ab…",
        ],
        "reset walkthrough": ["reset walkthrough"],
        "cleanup scan": ["cleanup scan", "cleanup scan --grace 0"],
        "cleanup run": [
            "cleanup run", "cleanup run --execute --max 50", "backupctl cleanup run --execute --yes",
            "cleanup run --execute --queue --yes",
        ],
        "cleanup status": ["cleanup status", "cleanup status --state failed --limit 20"],
        "cleanup ingest-log": ["cleanup ingest-log service.log"],
        "cleanup teardown-request": ["cleanup teardown-request SUBORG_ID --out body.json"],
        "cleanup submit": ["cleanup submit --body-file body.json --stamp STAMP"],
        "serve": [
            "backupctl --db /var/lib/backupctl/console.db serve --listen 127.0.0.1:8443",
            "backupctl --db console.db serve --listen 0.0.0.0:8443 --tls-cert server.pem --tls-key server.key",
        ],
        "worker": [
            "BACKUPCTL_DB=postgres://backupctl@db.internal/backupctl?sslmode=verify-full backupctl worker --workers 4",
            "backupctl --db console.db --tenant prod worker",
        ],
        "sandbox turnkey": ["backupctl sandbox turnkey --listen 127.0.0.1:8443 --state turnkey.json"],
        "sandbox backup-service": [
            "backupctl sandbox backup-service --listen 127.0.0.1:8788 --export runbooks/fixtures/export"
        ],
        "lookup passkey": [
            "lookup passkey w6hZIQi3LVcwPvQekJSl_Q", "lookup passkey -5iGFbL3U… (ids starting with - work)",
        ],
        "lookup oidc": ["lookup oidc google 110248495921238986420", "lookup oidc https://issuer.example SUB"],
        "lookup keypair": ["lookup keypair A1b2…", "lookup keypair 04ab… --sync"],
        "lookup account": ["lookup account backup_account_02ab…", "backupctl lookup account X --format json"],
        "show": ["show backup_account_02ab…", "backupctl --format json show backup_account_02ab…"],
        "check": ["check", "check backup_account_02ab…"],
        "stats": ["stats"],
    ]
}
