"""Replays the statements the ClickHouse engine sent to a ClickHouse server (JSON lines of
{"statement", "data", "answer"}) on chdb — a current ClickHouse release in process — and
requires every SELECT to give the same rows (as a multiset: statements without ORDER BY
may come back in any order).

chdb has no cluster, so a Distributed table's CREATE is only parsed (EXPLAIN AST) and the
table is made a view of its local table; inserts into a Distributed table go to its local
table. Everything else runs verbatim. Prints "compared N" and exits 0, or prints each
difference and exits 1.
"""

import json
import re
import sys
import tempfile

from chdb import session


def main(path: str) -> int:
    exchanges = [json.loads(line) for line in open(path, encoding="utf-8")]
    # chdb's data directory, removed when the replay ends.
    with tempfile.TemporaryDirectory(prefix="periscope-chdb-") as data:
        sess = session.Session(data)
        try:
            return replay(sess, exchanges)
        finally:
            sess.close()


def replay(sess: "session.Session", exchanges: list) -> int:
    """Replays `exchanges` on `sess`; returns the exit status."""
    compared = 0
    failures = 0
    for ex in exchanges:
        statement = ex["statement"]
        if "ENGINE = Distributed(" in statement:
            sess.query("EXPLAIN AST " + statement, "TabSeparated")
            m = re.match(
                r"CREATE TABLE IF NOT EXISTS (\w+)\.(\w+) AS (\w+)\.(\w+) ENGINE", statement
            )
            if not m:
                print("unexpected Distributed statement:", statement)
                return 1
            sess.query(
                f"CREATE VIEW IF NOT EXISTS {m[1]}.{m[2]} AS SELECT * FROM {m[3]}.{m[4]}"
            )
            continue
        if ex["data"] is not None:
            local = re.sub(r"^INSERT INTO (\w+)\.(\w+) ", r"INSERT INTO \1.\2_local ", statement)
            sess.query(local + "\n" + ex["data"])
            continue
        try:
            # Decoded as the engine decodes answers (invalid UTF-8 replaced).
            got = sess.query(statement, "TabSeparated").bytes().decode("utf-8", errors="replace")
        except Exception as e:  # noqa: BLE001 - the message is the report
            print(f"refused by ClickHouse {sess.query('SELECT version()', 'TabSeparated').bytes().decode().strip()}:\n  {statement}\n  {e}")
            failures += 1
            continue
        if statement.lstrip().startswith("SELECT"):
            compared += 1
            if sorted(got.splitlines()) != sorted(ex["answer"].splitlines()):
                failures += 1
                print(f"different rows:\n  {statement}\n  18.16: {ex['answer']!r}\n  now:   {got!r}")
    print(f"compared {compared}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
