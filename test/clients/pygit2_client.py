"""libgit2 (through pygit2) as a git client, driven by test/integration/clients/pygit2.test.ts.

Run with Debian's /usr/bin/python3 (python3-pygit2). Credentials come from NARWAL_USER and
NARWAL_PASSWORD through libgit2's credentials callback, which it calls after the server's 401.
Each command prints one JSON object; on an error it prints {"error": ..., "message": ...} and
exits 1.

  clone URL DIR                   -> {"head": oid, "refs": {ref: oid}, "asked": n}
  fetch DIR                       -> {"refs": {ref: oid}} (the remote-tracking refs after it)
  commit DIR PATH CONTENT MESSAGE -> {"oid": oid}
  push DIR URL SRC:DST            -> {"refs": {ref: null | reason}}
"""
import json
import os
import sys

import pygit2

IDENTITY = pygit2.Signature("Pygit2 Client", "pygit2@example.com")


class Callbacks(pygit2.RemoteCallbacks):
    def __init__(self):
        super().__init__()
        self.asked = 0
        self.pushed = {}

    def credentials(self, url, username_from_url, allowed_types):
        self.asked += 1
        return pygit2.UserPass(os.environ["NARWAL_USER"], os.environ["NARWAL_PASSWORD"])

    def push_update_reference(self, refname, message):
        self.pushed[refname] = message


def refs_of(repo):
    return {name: str(repo.references[name].resolve().target) for name in repo.references}


def clone(url, target):
    callbacks = Callbacks()
    repo = pygit2.clone_repository(url, target, callbacks=callbacks)
    return {"head": str(repo.head.target), "refs": refs_of(repo), "asked": callbacks.asked}


def fetch(path):
    repo = pygit2.Repository(path)
    repo.remotes["origin"].fetch(callbacks=Callbacks())
    return {"refs": {k: v for k, v in refs_of(repo).items() if k.startswith("refs/remotes/")}}


def commit(path, name, content, message):
    repo = pygit2.Repository(path)
    with open(os.path.join(path, name), "w") as f:
        f.write(content)
    repo.index.add(name)
    repo.index.write()
    tree = repo.index.write_tree()
    oid = repo.create_commit("HEAD", IDENTITY, IDENTITY, message, tree, [repo.head.target])
    return {"oid": str(oid)}


def push(path, url, refspec):
    repo = pygit2.Repository(path)
    if "target" in [r.name for r in repo.remotes]:
        repo.remotes.set_url("target", url)
    else:
        repo.remotes.create("target", url)
    remote = repo.remotes["target"]
    callbacks = Callbacks()
    remote.push([refspec], callbacks=callbacks)
    return {"refs": callbacks.pushed}


COMMANDS = {"clone": clone, "fetch": fetch, "commit": commit, "push": push}

if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    try:
        print(json.dumps(COMMANDS[command](*args)))
    except Exception as error:  # reported to the test, which checks the message
        print(json.dumps({"error": type(error).__name__, "message": str(error)}))
        sys.exit(1)
