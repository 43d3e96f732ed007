"""Drives `backupctl serve` through a client that openapi-python-client generated from
/openapi.json (see scripts/api-conformance.sh): a lookup, a show and `cleanup status`, each
answered with the typed model the document names. Exits non-zero on any other answer.

    api_client_check.py URL TOKEN_FILE BACKUP_ID
"""

import sys

from backupctl_serve_client import AuthenticatedClient
from backupctl_serve_client.api.operations import cleanup_status, lookup, show
from backupctl_serve_client.models import (
    BackupReport,
    CleanupStatusOperation,
    LookupByAccount,
    LookupByAccountKind,
    LookupOperation,
    LookupResult,
    ShowOperation,
    StatusReport,
)


def main() -> int:
    url, token_file, backup_id = sys.argv[1:4]
    with open(token_file, encoding="utf-8") as handle:
        token = handle.read().strip()
    client = AuthenticatedClient(base_url=url, token=token, headers={"Backupctl-Tenant": "sandbox"})

    query = LookupByAccount(kind=LookupByAccountKind.ACCOUNT, backup_account_id=backup_id)
    found = lookup.sync(client=client, body=LookupOperation(query=query))
    if not isinstance(found, LookupResult):
        print(f"lookup: expected a LookupResult, got {found!r}", file=sys.stderr)
        return 1
    report = show.sync(client=client, body=ShowOperation(backup_id=found.backup_id))
    if not isinstance(report, BackupReport) or report.backup_id != backup_id:
        print(f"show: expected the BackupReport of {backup_id}, got {report!r}", file=sys.stderr)
        return 1
    status = cleanup_status.sync(client=client, body=CleanupStatusOperation(states=[], limit=5))
    if not isinstance(status, StatusReport):
        print(f"cleanup status: expected a StatusReport, got {status!r}", file=sys.stderr)
        return 1
    print(f"lookup -> {found.backup_id}; show -> {len(report.factors)} factor(s), blob {report.sealed_blob.bytes_} bytes;"
          f" cleanup status -> {status.pending} pending, {len(status.items)} item(s) listed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
