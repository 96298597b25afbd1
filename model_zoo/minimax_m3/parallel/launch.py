"""``generate --tp R`` / ``--block-split R``: starts R ranks with msrun on this machine and watches them until they
finish, fail or time out.

The user writes no rank file: msrun gets 127.0.0.1, a free port and a temporary --log_dir. Each rank (rank.py)
writes into that folder its pid, its step count, its stdout and, at the end, a status ("ok" or the error). The
launcher polls those files and msrun, and waits on the ranks' processes: a rank whose process is gone without an
"ok" (the first to exit, when a broken collective takes others down after it), an error status, msrun exiting
early or the --timeout deadline stops the whole run, naming the rank. Whatever the outcome, the msrun
process group and every rank pid are killed and reaped before returning.
"""
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from .run_env import LAUNCHER_ENV, RUN_DIR_ENV, plan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
POLL_SECONDS = 0.2


def main(args, prompt, parser):
    """--tp R > 1 or --block-split R > 1 from the CLI: a rank under msrun runs its part, anything else launches
    the R ranks."""
    if os.environ.get(RUN_DIR_ENV):
        from . import rank
        return rank.run(args, prompt, parser)
    from ..model.config import MiniMaxM3Config, tiny_config
    from ..serving.run import check_ids
    from .block_split_plan import check_block_split
    from .tp_layers import check_tp_size
    flag, size = plan(args)
    config = MiniMaxM3Config.from_pretrained(args.checkpoint) if args.checkpoint else tiny_config()
    try:                                        # refused before any process starts
        if flag == "--tp":
            check_tp_size(config, size)
        else:
            check_block_split(size)
    except ValueError as err:
        parser.error(str(err))
    check_ids(args, prompt, config.vocab_size, parser.error)
    code, text = launch(sys.argv[1:] if args.argv is None else args.argv, size, args.timeout, label=f"{flag} {size}")
    print(text, end="" if text.endswith("\n") else "\n")
    if code:
        sys.exit(code)
    return None


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def _alive(pid):
    import psutil
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def launch(cli_argv, tp_size, timeout, label=None):
    """Runs the CLI arguments `cli_argv` on `tp_size` ranks under msrun. Returns (exit code, text to print):
    rank 0's output and every rank's report line on success, the failure naming the rank otherwise (prefixed
    with `label`, default "--tp R")."""
    label = label or f"--tp {tp_size}"
    run_dir = tempfile.mkdtemp(prefix="m3_tp_")
    env = dict(os.environ, **{RUN_DIR_ENV: run_dir})
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")   # msrun starts "python"
    cmd = [sys.executable, "-c", "from mindspore.parallel.cluster.run import main; main()",
           f"--worker_num={tp_size}", f"--local_worker_num={tp_size}", "--master_addr=127.0.0.1",
           f"--master_port={free_port()}", f"--log_dir={os.path.join(run_dir, 'log')}", "--join=True",
           f"--cluster_time_out={max(30, int(timeout))}",
           # no worker id is tp_size: msrun starts no `tail -f` of the worker logs (read from log/ instead), a
           # process that nothing would end once the ranks take msrun down with them (_killed_with_parent)
           f"--tail_worker_log={tp_size}", WORKER] + list(cli_argv)
    start = time.monotonic()
    msrun_log = open(os.path.join(run_dir, "msrun.log"), "wb")
    # msrun in a process group of its own (pgid = its pid), killed as one below; the ranks learn both pids, so a
    # launcher killed outright (SIGKILL: no finally runs) still takes them down (rank.py's watchdog).
    env[LAUNCHER_ENV] = str(os.getpid())
    proc = subprocess.Popen(cmd, stdout=msrun_log, stderr=subprocess.STDOUT, env=env, cwd=os.getcwd(),
                            start_new_session=True, preexec_fn=_killed_with_parent)
    failure = None
    # SIGTERM (a supervisor stopping us) unwinds through the finally below like Ctrl-C, so the ranks go too.
    previous = signal.signal(signal.SIGTERM, _raise_exit)
    try:
        failure = _watch(proc, run_dir, tp_size, start + timeout, timeout, label)
    finally:
        _stop(proc, run_dir, tp_size)
        msrun_log.close()
        signal.signal(signal.SIGTERM, previous)
    try:
        if failure:
            return 1, failure + _log_tails(run_dir, tp_size)
        out = _read(os.path.join(run_dir, "rank0.out")) or ""
        for r in range(1, tp_size):
            out += "".join(line + "\n" for line in (_read(os.path.join(run_dir, f"rank{r}.out")) or "").splitlines()
                           if line.startswith(f"rank {r}:"))
        return 0, out
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def _killed_with_parent():
    """In msrun's process, before it starts: SIGKILL when the launcher dies, at once, from the kernel (Linux
    prctl PR_SET_PDEATHSIG). The ranks ask the same of msrun (worker.py), so a launcher killed outright takes the
    whole run down even while the ranks' Python is busy in a long native call (their watchdog thread needs the
    GIL: a rank compiling a graph under load outlived it by more than 15 s)."""
    if sys.platform.startswith("linux"):
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


def _raise_exit(signum, frame):
    raise SystemExit(128 + signum)


def _watch(proc, run_dir, tp_size, deadline, timeout, label):
    """None when every rank reported ok; else the failure, naming the rank."""
    exits = _Exits(run_dir, tp_size)
    try:
        while True:
            statuses = [_read(os.path.join(run_dir, f"rank{r}.status")) for r in range(tp_size)]
            # A rank that vanished is the cause; the others may fail after it (a broken collective), so the one
            # that exited first is named.
            for r in exits.dead():
                if statuses[r] is None:
                    time.sleep(POLL_SECONDS)   # it may have written its status just before exiting
                    if _read(os.path.join(run_dir, f"rank{r}.status")) is None:
                        return f"{label}: rank {r} (pid {exits.pids[r]}) exited without finishing (died); " \
                               f"the other ranks were stopped"
            for r, status in enumerate(statuses):
                if status is not None and status != "ok":
                    # A collective that timed out fails on the rank that waited: name the rank that fell behind.
                    return f"{label}: rank {r} failed{_behind(run_dir, tp_size)}: {status.strip()}"
            if all(s == "ok" for s in statuses):
                return None
            if proc.poll() is not None:
                return f"{label}: msrun exited with code {proc.returncode} before ranks " \
                       f"{[r for r, s in enumerate(statuses) if s is None]} finished"
            if time.monotonic() > deadline:
                return f"{label}: timed out after {timeout:g} s (--timeout){_behind(run_dir, tp_size)}"
            exits.wait(POLL_SECONDS)
    finally:
        exits.close()


class _Exits:
    """The ranks' processes in the order they exited. Each rank's pidfd is polled (Linux 5.3+), so the launcher
    wakes the moment a rank exits: when one rank dies and its broken collective takes another down milliseconds
    later, the first is the one named, whatever their rank order. Where there is no pidfd, the rank is checked
    at every poll, in rank order."""

    def __init__(self, run_dir, tp_size):
        self.run_dir, self.tp_size = run_dir, tp_size
        self.pids, self.fds, self.order, self.polled = {}, {}, [], set()
        self.poller = select.poll()

    def _watch_new_pids(self):
        for r in range(self.tp_size):
            pid = None if r in self.pids else _read(os.path.join(self.run_dir, f"rank{r}.pid"))
            if not pid:
                continue
            self.pids[r] = int(pid)
            try:
                fd = os.pidfd_open(int(pid))
            except ProcessLookupError:             # gone before it was watched
                self.order.append(r)
                continue
            except (AttributeError, OSError):      # no pidfd on this system, or refused
                self.polled.add(r)
                continue
            self.fds[fd] = r
            self.poller.register(fd, select.POLLIN)

    def wait(self, seconds):
        """Sleeps `seconds`, or less when a watched rank exits."""
        self._watch_new_pids()
        for fd, _ in self.poller.poll(seconds * 1000):
            self.order.append(self.fds.pop(fd))
            self.poller.unregister(fd)
            os.close(fd)

    def dead(self):
        """The ranks whose process has exited, first to exit first."""
        self.wait(0)
        self.order += [r for r in sorted(self.polled) if r not in self.order and not _alive(self.pids[r])]
        return list(self.order)

    def close(self):
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()


def _behind(run_dir, tp_size):
    """", rank r is behind (hung or slow): steps entered per rank {...}" when the ranks' progress differs."""
    steps = {r: int(_read(os.path.join(run_dir, f"rank{r}.step")) or 0) for r in range(tp_size)}
    if len(set(steps.values())) == 1:
        return ""
    behind = [r for r, n in steps.items() if n == min(steps.values())]
    return f"; rank {', '.join(map(str, behind))} is behind (hung or slow): model steps entered per rank {steps}"


def _stop(proc, run_dir, tp_size):
    """Kills msrun's process group, every rank pid and any process carrying this run's directory in its
    environment (msrun puts each worker in a session of its own), then reaps msrun: nothing is left behind."""
    import psutil
    pids = {int(p) for p in (_read(os.path.join(run_dir, f"rank{r}.pid")) for r in range(tp_size)) if p}
    for sig in (signal.SIGTERM, signal.SIGKILL, signal.SIGKILL):
        pids |= {p.pid for p in _processes_of(run_dir)}
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            continue
        psutil.wait_procs([p for p in map(_process, pids) if p], timeout=3)
        if not any(_alive(pid) for pid in pids) and not _processes_of(run_dir):
            break
    proc.wait()


def _process(pid):
    import psutil
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


def _processes_of(run_dir):
    import psutil
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get(RUN_DIR_ENV) == run_dir and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def _log_tails(run_dir, tp_size):
    text = ""
    for r in range(tp_size):
        out = _read(os.path.join(run_dir, f"rank{r}.out")) or ""
        log = _read(os.path.join(run_dir, "log", f"worker_{r}.log")) or ""
        errors = [line for line in log.splitlines() if "Error" in line or "Traceback" in line][-5:]
        text += f"\n--- rank {r}: last output lines ---\n" + "\n".join(out.splitlines()[-5:] + errors)
    return text + "\n"
