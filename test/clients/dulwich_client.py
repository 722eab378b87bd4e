"""dulwich as a git client, driven by test/integration/clients/dulwich.test.ts.

Run with Debian's /usr/bin/python3 (python3-dulwich). Credentials come from NARWAL_USER and
NARWAL_PASSWORD, so dulwich's own HTTP authentication is what sends them. Each command prints
one JSON object; on an error it prints {"error": ..., "message": ...} and exits 1.

  clone URL DIR                   -> {"head": oid, "refs": {ref: oid}}
  fetch DIR                       -> {"refs": {ref: oid}} (as the server listed them)
  commit DIR PATH CONTENT MESSAGE -> {"oid": oid}
  push DIR URL SRC:DST            -> {"refs": {ref: null | reason}}
"""
import json
import os
import sys

from dulwich import porcelain
from dulwich.client import get_transport_and_path
from dulwich.objects import ZERO_SHA
from dulwich.repo import Repo

AUTH = {"username": os.environ["NARWAL_USER"], "password": os.environ["NARWAL_PASSWORD"]}
IDENTITY = b"Dulwich Client <dulwich@example.com>"
NULL = open(os.devnull, "wb")


def text(refs):
    return {k.decode(): v.decode() for k, v in refs.items()}


def clone(url, target):
    repo = porcelain.clone(url, target, errstream=NULL, **AUTH)
    head = repo.head().decode()
    refs = text(repo.get_refs())
    repo.close()
    return {"head": head, "refs": refs}


def fetch(path):
    result = porcelain.fetch(path, "origin", errstream=NULL, **AUTH)
    return {"refs": text(result.refs)}


def commit(path, name, content, message):
    with open(os.path.join(path, name), "w") as f:
        f.write(content)
    porcelain.add(path, paths=[os.path.join(path, name)])
    oid = porcelain.commit(path, message=message.encode(), author=IDENTITY, committer=IDENTITY)
    return {"oid": oid.decode()}


def push(path, url, refspec):
    """Through dulwich's client API (what porcelain.push calls), to keep each ref's status."""
    src, dst = (part.encode() for part in refspec.split(":"))
    repo = Repo(path)
    client, remote_path = get_transport_and_path(url, **AUTH)

    def update_refs(refs):
        new = dict(refs)
        new[dst] = ZERO_SHA if src == b"" else repo.refs[src]
        return new

    result = client.send_pack(remote_path, update_refs, generate_pack_data=repo.generate_pack_data)
    statuses = result.ref_status or {}
    return {"refs": {ref.decode(): status for ref, status in statuses.items()}}


COMMANDS = {"clone": clone, "fetch": fetch, "commit": commit, "push": push}

if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    try:
        print(json.dumps(COMMANDS[command](*args)))
    except Exception as error:  # reported to the test, which checks the message
        print(json.dumps({"error": type(error).__name__, "message": str(error)}))
        sys.exit(1)
