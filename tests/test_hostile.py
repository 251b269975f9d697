"""The hostile corpus (tests/hostile/INDEX.json) in one batch mixed with benign programs.

Afterwards: every hostile program got its expected status, every benign program its right
answer, the canary files and the database are byte-identical, the pool still works, and no
process of the sandbox's uids (or its workers) survives ``close()``.

MBPP entries (``"dataset": "mbpp"``) are wrong implementations of ``add`` that try to forge their
verdict; each runs as an MBPP and as two HumanEval problems (plain asserts; a check with a loop,
variables and random inputs): none may be judged correct, and a benign
``add`` in the same batch must be. HumanEval entries (``"dataset": "humaneval"``, ``"problem"``: a
bundled HumanEval problem) are wrong programs for HumanEval/32, /38, /50, whose checks call a
helper of the prompt (``poly``, ``encode_cyclic``, ``encode_shift``) that the program may redefine
or whose modules it may patch: none may be judged correct, and the canonical solutions of those
problems in the same batch must be. Their lying methods (``__eq__``, ``__hash__``, ``__reduce__`` ...)
flag the process that runs them (``builtins.__lever_hostile_ran__``): never the parent. SQL entries
may name their own ``gold`` query and the expected ``correct``; those with ``"dataset": "wikitq"``
are judged against their ``targets`` (WikiTQ executor) instead. Entries with
``"phase": "after"`` run after the batch, several times so that every worker runs them (leftovers
of earlier programs: /tmp, /dev/shm, IPC objects). Afterwards the host has no new SysV IPC object.

Programs marked ``requires`` depend on a protection (e.g. ``drop_privileges``, only when run as
root); where the kernel refused it they are not run at all (a fork bomb without RLIMIT_NPROC would
hurt the machine), the rest still is.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from lever_jax.data.schema import Candidate, Problem
from lever_jax.execution.base import Limits, Task
from lever_jax.execution.python_gsm8k import GSM8kExecutor
from lever_jax.execution.python_tests import HumanEvalExecutor, MBPPExecutor
from lever_jax.execution.sandbox import Sandbox

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "hostile"
REPO = HERE.parent
LIMITS = Limits(timeout_s=2.0, cpu_s=2, memory_mb=512, output_bytes=4096)
BENIGN = 30


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def uid_processes(uids: set[int]) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = (Path("/proc") / entry / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("Uid:") and int(line.split()[1]) in uids:
                found.append(int(entry))
    return found


def pid_alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture()
def canary_dir(tmp_path):
    """A directory the sandbox shows the tasks (``Sandbox.task_path``: elsewhere than on the host
    when the checkout is under /tmp) with canaries and a database."""
    root = REPO / ".pytest_cache" / f"hostile-{uuid.uuid4().hex[:8]}"
    root.mkdir(parents=True)
    os.chmod(root, 0o755)
    (root / "canary.txt").write_text("canary\n")
    os.chmod(root / "canary.txt", 0o644)
    (root / "secret.txt").write_text("secret\n")
    os.chmod(root / "secret.txt", 0o600)
    for name in ("db.sqlite", "other.sqlite"):
        conn = sqlite3.connect(root / name)
        conn.execute("CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, age INTEGER)")
        conn.executemany("INSERT INTO singer VALUES (?, ?, ?)", [(i, f"s{i}", 20 + i % 30) for i in range(200)])
        conn.commit()
        conn.close()
        os.chmod(root / name, 0o644)
    tmp_canary = tmp_path / "tmp_canary.txt"
    tmp_canary.write_text("tmp canary\n")
    yield root, tmp_canary
    shutil.rmtree(root, ignore_errors=True)


ADD_CHECK = ("METADATA = {}\n\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n"
             "    assert abs(candidate(5, 5) - 10) < 1e-9\n    assert sorted([candidate(1, 1)]) == [2]\n"
             "    assert {candidate(2, 2): 1} == {4: 1}\n")
# the shapes of HumanEval/44, /53, /129, /151 (a loop, variables, random inputs, a bare `print`):
# unrolled into plain asserts (check_unroll); before, the whole check ran in the child (forgeable)
ADD_CHECK_LOOP = ("def check(candidate):\n    import random\n    print\n    assert candidate(1, 2) == 3\n"
                  "    for x in range(3):\n        assert candidate(x, x + 1) == 2 * x + 1\n"
                  "    lst = [i * 2 for i in range(5) if i > 0]\n    for _ in range(20):\n"
                  "        a, b = random.randint(0, 100), random.randint(0, 100)\n"
                  "        assert candidate(a, b) == a + b, 'message'\n"
                  "    assert candidate(lst[0], lst[-1]) == sum([lst[0], lst[-1]])\n")
ADD_TESTS = ["assert add(1, 2) == 3", "assert add(5, 5) == 10", "assert math.isclose(add(0.1, 0.2), 0.3)",
             "assert set([add(1, 1)]) == {2}"]


def posix_mq_exists(name: bytes = b"/lever-hostile") -> bool:
    """Whether the POSIX message queue a hostile program creates exists in the host's IPC namespace."""
    import ctypes

    try:
        rt = ctypes.CDLL("librt.so.1", use_errno=True)
    except OSError:
        return False
    fd = rt.mq_open(name, os.O_RDONLY, 0, None)
    if fd >= 0:
        os.close(fd)
        rt.mq_unlink(name)
        return True
    return False


def sysv_ipc() -> list[str]:
    """The host's SysV IPC objects (one line each)."""
    out = []
    for kind in ("shm", "msg", "sem"):
        try:
            out += [f"{kind} {line}" for line in Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]]
        except OSError:
            pass
    return out


@pytest.fixture()
def host_socket():
    """A world-writable unix socket outside anything the sandbox shows (it must not be reachable)."""
    import socket

    where = REPO / ".pytest_cache" / f"sock-{uuid.uuid4().hex[:8]}"
    if len(os.fsencode(where / "s.sock")) > 100:  # AF_UNIX paths stop at 107 bytes: a deep checkout
        where = Path(tempfile.mkdtemp(prefix="sock-", dir="/tmp"))  # (a clone in pytest's tmp) uses /tmp
    where.mkdir(parents=True, exist_ok=True)
    os.chmod(where, 0o777)
    path = where / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    os.chmod(path, 0o777)
    yield path
    server.close()
    shutil.rmtree(where, ignore_errors=True)


def load_corpus(canary_root: Path, tmp_canary: Path, sock: Path | None = None) -> list[tuple[str, str, dict]]:
    index = json.loads((CORPUS / "INDEX.json").read_text())
    items = []
    for name, expected in sorted(index.items()):
        text = (CORPUS / name).read_text()
        text = text.replace("{CANARY_DIR}", str(canary_root)).replace("{TMP_CANARY}", str(tmp_canary))
        text = text.replace("{SOCKET}", str(sock)).replace("{REPO}", str(REPO))
        items.append((name, text, expected))
    return items


def test_corpus_is_large_enough():
    index = json.loads((CORPUS / "INDEX.json").read_text())
    assert len(index) >= 40
    for name in index:
        assert (CORPUS / name).is_file(), name


@pytest.mark.slow
def test_hostile_batch(canary_dir, host_socket):
    root, tmp_canary = canary_dir
    sandbox = Sandbox(workers=2, limits=LIMITS, readable=[root])
    # where the tasks find the canary directory: elsewhere than on the host when it is under /tmp
    # (a checkout cloned there), since every task's own /tmp is empty
    shown = Path(sandbox.task_path(root))
    corpus = load_corpus(shown, tmp_canary, host_socket)
    ipc_before = sysv_ipc()
    mbpp = MBPPExecutor()
    humaneval = HumanEvalExecutor()
    add_problem = Problem("h-add", "mbpp", "add two numbers", {"test_list": ADD_TESTS, "test_setup_code": ""}, "", ())
    add_humaneval = Problem("h-add-he", "humaneval", "add two numbers",
                            {"test": ADD_CHECK, "entry_point": "add", "prompt": "def add(a, b):\n"}, "", ())
    add_humaneval_loop = Problem("h-add-he-loop", "humaneval", "add two numbers",
                                 {"test": ADD_CHECK_LOOP, "entry_point": "add", "prompt": "def add(a, b):\n"}, "", ())
    try:
        from lever_jax.execution import sql as sql_module
    except ImportError:
        sql_module = None
    # One namespace (faithful_cot): the corpus's recursive / helper functions must reach the sandbox's
    # limits; under LEVER's separate globals and locals some would stop early with a NameError.
    gsm = GSM8kExecutor(convention="faithful_cot")
    tracked = [root / "canary.txt", root / "secret.txt", root / "db.sqlite", root / "other.sqlite", tmp_canary]
    before = {p: sha(p) for p in tracked}

    jobs = []  # (kind, name, expected, problem, candidate, task)
    after = []
    he_problems = humaneval_problems({e["problem"] for _, _, e in corpus if e.get("dataset") == "humaneval"})
    for name, text, expected in corpus:
        if expected.get("dataset") == "humaneval":
            he_problem, cand = he_problems[expected["problem"]], Candidate(text)
            jobs.append(("humaneval", name, expected, he_problem, cand, humaneval.make_task(he_problem, cand)))
        elif expected.get("dataset") == "mbpp":
            cand = Candidate(text)
            jobs.append(("mbpp", name, expected, add_problem, cand, mbpp.make_task(add_problem, cand)))
            for he_problem in (add_humaneval, add_humaneval_loop):
                jobs.append(("humaneval", name, expected, he_problem, cand, humaneval.make_task(he_problem, cand)))
        elif expected.get("phase") == "after":
            problem = Problem(f"h-{name}", "gsm8k", "q", {}, 0.0, ())
            for _ in range(6):
                after.append(("hostile", name, expected, problem, Candidate(text), gsm.make_task(problem, Candidate(text))))
        elif name.endswith(".sql"):
            if sql_module is None:
                continue
            gold = expected.get("gold", "SELECT count(*) FROM singer")
            problem = Problem(f"h-{name}", "spider", "q", {"db_id": "hostile"}, gold, ())
            cand = Candidate(text.strip())
            payload = {"dataset": "spider", "db_path": str(shown / "db.sqlite"), "sql": cand.program,
                       "timeout_s": 1.0, "max_rows": 1000, "gold_sql": problem.gold}
            if expected.get("dataset") == "wikitq":
                payload.update(dataset="wikitq", targets=expected["targets"], question="q", gold_sql=None)
            jobs.append(("sql", name, expected, problem, cand, Task(sql_module.TASK_FUNCTION, payload)))
        else:
            problem = Problem(f"h-{name}", "gsm8k", "q", {}, 1.0, ())
            cand = Candidate(text)
            jobs.append(("hostile", name, expected, problem, cand, gsm.make_task(problem, cand)))
    benign = []
    for i in range(BENIGN):
        problem = Problem(f"b-{i}", "gsm8k", "q", {}, i * 7 + 0.5, ())
        cand = Candidate(f"x = {i}\nanswer = x * 7 + 0.5")
        benign.append(("benign", f"benign-{i}", {"status": "ok", "answer": i * 7 + 0.5}, problem, cand,
                       gsm.make_task(problem, cand)))
    # interleave benign programs between the hostile ones
    mixed = []
    for i, job in enumerate(jobs):
        mixed.append(job)
        if i % 2 == 0 and benign:
            mixed.append(benign.pop())
    mixed.extend(benign)
    good_add = Candidate("def add(a, b):\n    return a + b\n")
    for i in range(0, len(mixed), 10):
        mixed.insert(i, ("benign-mbpp", "benign-add", {}, add_problem, good_add, mbpp.make_task(add_problem, good_add)))
    for he_problem in (add_humaneval, add_humaneval_loop):
        mixed.insert(5, ("benign-humaneval", "benign-add", {}, he_problem, good_add,
                         humaneval.make_task(he_problem, good_add)))
    for he_problem in he_problems.values():  # the canonical solutions of the forgers' problems
        gold = Candidate(he_problem.gold)
        mixed.insert(7, ("benign-humaneval", f"gold-{he_problem.problem_id}", {}, he_problem, gold,
                         humaneval.make_task(he_problem, gold)))

    uids = set(sandbox.task_uids())
    workers = sandbox.worker_pids()
    protections = sandbox.protections()
    mixed = [job for job in mixed if not job[2].get("requires") or protections.get(job[2]["requires"])]
    after = [job for job in after if not job[2].get("requires") or protections.get(job[2]["requires"])]
    try:
        problems = []
        results = list(sandbox.map([job[5] for job in mixed]))
        results_after = list(sandbox.map([job[5] for job in after]))
        for (kind, name, expected, problem, cand, _task), result in zip(mixed + after, results + results_after):
            if kind in ("mbpp", "benign-mbpp", "humaneval", "benign-humaneval"):
                executor = humaneval if kind.endswith("humaneval") else mbpp
                execution = executor.to_execution(problem, cand, result)
                if execution.correct != kind.startswith("benign"):
                    problems.append(f"{name} ({kind} {problem.problem_id}): judged correct={execution.correct} "
                                    f"({execution.status} {execution.error!r})")
                if kind.endswith("humaneval") and execution.details.get("unverified_tests"):
                    problems.append(f"{name} ({kind} {problem.problem_id}): a test was judged in the child")
                continue
            if kind == "sql":
                wikitq = expected.get("dataset") == "wikitq"
                executor = sql_module.WikiTQExecutor() if wikitq else sql_module.SpiderExecutor()
                execution = executor.to_execution(problem, cand, result)
            else:
                execution = gsm.to_execution(problem, cand, result)
            where = f"{name}: {execution.status} {execution.error!r}"
            if expected["status"] != execution.status:
                problems.append(f"{where} (expected {expected['status']})")
                continue
            if "answer" in expected and execution.details.get("answer") != expected["answer"]:
                problems.append(f"{where}: answer {execution.details.get('answer')!r} != {expected['answer']!r}")
            wanted = expected.get("error_contains")
            if wanted is not None:  # a string, or a list of acceptable alternatives
                options = [wanted] if isinstance(wanted, str) else wanted
                if not any(option in (execution.error or "") for option in options):
                    problems.append(f"{where}: error lacks {wanted!r}")
            if "correct" in expected and execution.correct != expected["correct"]:
                problems.append(f"{where}: judged correct={execution.correct}")
            if kind == "benign" and not execution.correct:
                problems.append(f"{where}: benign program not correct")
        assert problems == [], "\n".join(problems)
        # no lying method of a candidate ran here (they flag the process that runs them)
        import builtins

        assert not hasattr(builtins, "__lever_hostile_ran__"), builtins.__dict__.get("__lever_hostile_ran__")
        # the pool still works after the corpus
        after = list(sandbox.map([Task("lever_jax.execution.python_gsm8k:run", {"program": f"answer = {i}"})
                                  for i in range(8)]))
        assert [r.value["number"] for r in after] == list(range(8))
    finally:
        sandbox.close()

    assert {p: sha(p) for p in tracked} == before
    assert sysv_ipc() == ipc_before
    assert not posix_mq_exists()
    assert not (root / "pwned").exists() and not (root / "copy.sqlite").exists()
    assert sorted(os.listdir(root)) == ["canary.txt", "db.sqlite", "other.sqlite", "secret.txt"]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (uid_processes(uids) or any(pid_alive(p) for p in workers)):
        time.sleep(0.05)
    assert uid_processes(uids) == []
    assert not any(pid_alive(p) for p in workers)


def humaneval_problems(ids: set[str]) -> dict[str, Problem]:
    """The bundled HumanEval problems ``ids`` (bundled in the package: missing data fails)."""
    from lever_jax.data.datasets import load_problems

    found = {p.problem_id: p for p in load_problems("humaneval", "test") if p.problem_id in ids}
    assert sorted(found) == sorted(ids)
    return found


def _probe(value: object) -> None:
    """Compare / hash / print a value the way a careless judge would."""
    for method in (lambda v: v == 3, hash, repr):
        try:
            method(value)
        except Exception:  # noqa: BLE001 - e.g. an unhashable list
            pass
    if type(value) is list:
        for item in value:
            _probe(item)
    if type(value) is dict:
        for key, item in dict.items(value):
            _probe(key)
            _probe(item)


def test_lying_methods_flag_the_process_that_runs_them(tmp_path):
    """The parent-side check of test_hostile_batch can fail: run here, every lying program's answer
    flips ``builtins.__lever_hostile_ran__`` as soon as it is compared, hashed or printed."""
    import builtins

    index = json.loads((CORPUS / "INDEX.json").read_text())
    liars = [name for name in sorted(index) if "_ran_here" in (CORPUS / name).read_text()]
    assert len(liars) >= 5
    for name in liars:
        namespace: dict = {}
        exec((CORPUS / name).read_text().replace("{CANARY_DIR}", str(tmp_path)), namespace)  # noqa: S102
        function, args = index[name].get("entry_point", "add"), index[name].get("probe_args", [1, 2])
        try:
            _probe(namespace[function](*args))
            assert hasattr(builtins, "__lever_hostile_ran__"), name
        finally:
            builtins.__dict__.pop("__lever_hostile_ran__", None)
