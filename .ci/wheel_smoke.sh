#!/usr/bin/env bash
# The package as a user gets it (issue 25): build the wheel (`python -m pip wheel . --no-deps`),
# install it into a fresh venv outside the checkout and, from a folder outside the checkout, run
# `ranklens --version`, `ranklens demo`, `ranklens evaluate` on the demo files and
# `ranklens serve` until /_stcore/health answers ok. `make wheel-smoke` runs it; so does .ci/run.
#
# The fresh venv gets the wheel alone (--no-deps); its dependencies are those of the project's
# .venv, on its sys.path through a .pth file (after its own site-packages), so the smoke costs
# seconds instead of a download and install of ~1 GB. .venv holds no RankLens code (the checkout is
# never installed there), the smoke checks that `core` and `pages` are imported from the fresh venv,
# and `pip check` that the wheel's declared requirements are met by what it runs with.
# Build from a copy of what the package is made of, so that no build/ or *.egg-info is left in the checkout.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PY:-$root/.venv/bin/python}"
start=$SECONDS
tmp="$(mktemp -d "${TMPDIR:-/tmp}/ranklens-wheel.XXXXXX")"
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
step() { printf 'wheel smoke [%3ds] %s\n' "$((SECONDS - start))" "$*"; }

step "build: python -m pip wheel . --no-deps"
mkdir "$tmp/src" "$tmp/dist" "$tmp/work"
tar -C "$root" -c --exclude=__pycache__ --exclude='*.pyc' \
  pyproject.toml README.md requirements.txt requirements-ray.txt requirements-irds.txt app.py .streamlit core pages | tar -C "$tmp/src" -x
(cd "$tmp/src" && "$PY" -m pip wheel . -w "$tmp/dist" --no-deps --quiet)
wheel=$(ls "$tmp"/dist/ranklens-*.whl)

step "fresh venv outside the checkout: $tmp/venv; install $(basename "$wheel")"
"$PY" -m venv --without-pip "$tmp/venv"
venv_py="$tmp/venv/bin/python"
"$PY" -c 'import sysconfig; print(sysconfig.get_path("purelib"))' >"$("$venv_py" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/ranklens-deps.pth"
"$venv_py" -m pip install --no-deps --no-index --quiet "$wheel"
"$venv_py" -m pip check

cd "$tmp/work"
unset PYTHONPATH
export PATH="$tmp/venv/bin:$PATH"
step "from $PWD: where core and pages come from"
"$venv_py" - "$tmp/venv" "$root" <<'EOF'
import sys
from pathlib import Path

import core
import pages.common

venv, checkout = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
for module in (core, pages.common):
    where = Path(module.__file__).resolve()
    assert where.is_relative_to(venv) and not where.is_relative_to(checkout), where
print(f"core from {Path(core.__file__).parent}")
EOF

step "ranklens --version"
version=$(ranklens --version)
echo "$version"
expected="ranklens $("$venv_py" -c 'import core; print(core.__version__)')"
[ "$version" = "$expected" ] || { echo "expected $expected" >&2; exit 1; }

step "ranklens demo demo-data; ranklens evaluate"
ranklens demo demo-data >/dev/null
ranklens evaluate --run demo-data/evaluation-run-bm25-float-scores.trec \
  --run demo-data/evaluation-run-llm-grader-0-3.trec \
  --qrels demo-data/evaluation-qrels-demo-qrels-graded-0-3.qrels --metrics mrr@10,ndcg@10 | tee evaluate.txt
grep -q '^bm25-float-scores ' <(sed 's/^ *//' evaluate.txt)

port=$("$venv_py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
step "ranklens serve --server.headless true --server.port $port: waiting for /_stcore/health"
ranklens serve --server.headless true --server.port "$port" --server.address 127.0.0.1 >serve.log 2>&1 &
server=$!
"$venv_py" - "$port" "$server" <<'EOF' || { cat serve.log >&2; exit 1; }
import os
import sys
import time
import urllib.request

port, pid = int(sys.argv[1]), int(sys.argv[2])
deadline = time.monotonic() + 180  # the server's imports and the demo's warm-up, on a loaded CI machine
while time.monotonic() < deadline:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5) as reply:
            body = reply.read().decode()
        print(f"/_stcore/health: {body}")
        sys.exit(0 if body == "ok" else 1)
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            sys.exit("the server ended before answering")
        time.sleep(0.5)
sys.exit("no answer from /_stcore/health")
EOF
if grep -q Traceback serve.log; then cat serve.log >&2; exit 1; fi
kill "$server"
wait "$server" 2>/dev/null || true
server=""
step "ok"
