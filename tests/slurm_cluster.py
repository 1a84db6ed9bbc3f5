"""A real one-node SLURM cluster for the tests: Debian's munged, slurmctld and slurmd, started by PID as root with
their own munge key, socket, config, state, spool and logs under one temporary folder (no system service, no
systemctl), stopped by PID. Clients reach it through ``SLURM_CONF`` (``Cluster.env``).

``start_cluster`` raises ``ClusterUnavailable`` with the reason where it cannot start (not root, binaries missing,
slurmd refusing the node): the fixture skips with that reason, and only then.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol", "sinfo")
PARTITIONS = ("cpu", "gpu")  # the names the launcher presets use (configs/hydra/launcher/slurm_*.yaml); one node


class ClusterUnavailable(Exception):
    pass


@dataclass
class Cluster:
    root: Path
    conf: Path
    node: str
    cpus: int
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *command: str, check: bool = True, timeout: float = 30) -> str:
        result = subprocess.run(list(command), env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode:
            raise RuntimeError(f"{' '.join(command)} exited {result.returncode}: {result.stderr.strip()}")
        return result.stdout

    def jobs(self) -> list[dict]:
        """The controller's jobs (running, pending, or ended within MinJobAge): id, array ids, state, node."""
        out = self.run("squeue", "--noheader", "--states=all", "--format=%i|%F|%K|%T|%N|%r")
        rows = [line.split("|") for line in out.splitlines() if line.strip()]
        return [{"id": r[0], "array_job_id": r[1], "array_task_id": r[2], "state": r[3], "node": r[4],
                 "reason": r[5]} for r in rows]

    def wait_for(self, predicate, timeout: float = 120, what: str = "the cluster") -> object:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.5)
        raise TimeoutError(f"waited {timeout:.0f}s for {what}; slurmctld log:\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        texts = []
        for name in ("slurmctld.log", "slurmd.log"):
            path = self.root / "log" / name
            if path.is_file():
                texts.append(f"--- {name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(texts)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _memory_mib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024 - 512  # what slurmd reports, less a margin it does not count
    return 1024


def _config(root: Path, node: str, cpus: int, munge_socket: Path) -> str:
    ports = (_free_port(), _free_port())
    return "\n".join([
        "ClusterName=clonebench-test",
        f"SlurmctldHost={node}(127.0.0.1)",
        f"SlurmctldPort={ports[0]}", f"SlurmdPort={ports[1]}",
        "SlurmUser=root", "SlurmdUser=root",
        "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={munge_socket}",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "MpiDefault=none", "SwitchType=switch/none",
        "SchedulerType=sched/backfill", "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU",
        "AccountingStorageType=accounting_storage/none", "JobAcctGatherType=jobacct_gather/none",
        "JobCompType=jobcomp/none", "ReturnToService=2", "JobRequeue=1", "MinJobAge=600", "KillWait=10",
        "SchedulerParameters=sched_interval=1", "MessageTimeout=20",
        f"StateSaveLocation={root / 'state'}", f"SlurmdSpoolDir={root / 'spool'}",
        f"SlurmctldPidFile={root / 'run' / 'slurmctld.pid'}", f"SlurmdPidFile={root / 'run' / 'slurmd.pid'}",
        f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}", f"SlurmdLogFile={root / 'log' / 'slurmd.log'}",
        "SlurmctldDebug=info", "SlurmdDebug=info",
        f"NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={_memory_mib()} State=UNKNOWN",
        *(f"PartitionName={name} Nodes={node} Default={'YES' if name == PARTITIONS[0] else 'NO'} MaxTime=INFINITE "
          "State=UP" for name in PARTITIONS),
        "",
    ])


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@contextmanager
def running_cluster(root: Path):
    """Start munged, slurmctld and slurmd in the foreground (so their PIDs are ours), wait for the node to be idle,
    yield the Cluster, stop them by PID."""
    if os.geteuid() != 0:
        raise ClusterUnavailable("the one-node SLURM runs its daemons as root (SlurmUser=root); not root here")
    missing = [b for b in BINARIES if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]
    if missing:
        raise ClusterUnavailable(f"missing {', '.join(missing)}: bash scripts/setup.sh installs slurmctld, slurmd, "
                                 "slurm-client and munge")
    sbin = lambda name: shutil.which(name) or str(Path("/usr/sbin", name))  # noqa: E731
    for sub in ("munge", "state", "spool", "run", "log"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(root / "munge", 0o700)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o600)
    munge_socket = root / "munge" / "munge.socket"
    node = socket.gethostname().split(".")[0]
    cpus = os.cpu_count() or 1
    conf = root / "slurm.conf"
    conf.write_text(_config(root, node, cpus, munge_socket))
    cluster = Cluster(root, conf, node, cpus)
    logs = root / "log"
    try:
        cluster.processes.append(subprocess.Popen(
            [sbin("munged"), "--foreground", "--force", f"--socket={munge_socket}", f"--key-file={key}",
             f"--pid-file={root / 'munge' / 'munged.pid'}", f"--log-file={logs / 'munged.log'}",
             f"--seed-file={root / 'munge' / 'munged.seed'}"],
            stdout=subprocess.DEVNULL, stderr=(logs / "munged.stderr").open("wb")))
        cluster.wait_for(lambda: munge_socket.exists() or cluster.processes[0].poll() is not None, 20, "munged")
        if cluster.processes[0].poll() is not None:
            raise ClusterUnavailable(f"munged exited: {(logs / 'munged.stderr').read_text(errors='replace')[-500:]}")
        for daemon in ("slurmctld", "slurmd"):
            process = subprocess.Popen([sbin(daemon), "-D", "-f", str(conf)], env=cluster.env,
                                       stdout=subprocess.DEVNULL, stderr=(logs / f"{daemon}.stderr").open("wb"))
            cluster.processes.append(process)
            if daemon == "slurmctld":
                cluster.wait_for(lambda: cluster.run("scontrol", "ping", check=False).find("UP") >= 0
                                 or process.poll() is not None, 60, "slurmctld")
        slurmd = cluster.processes[-1]

        def node_ready():
            if slurmd.poll() is not None:
                raise ClusterUnavailable(f"slurmd cannot start: {cluster.log_tail(10)}")
            state = cluster.run("sinfo", "--noheader", "--format=%T", "--nodes", node, check=False).strip()
            return state.startswith(("idle", "mixed", "allocated"))

        cluster.wait_for(node_ready, 60, "the node to be idle")
        yield cluster
    finally:
        if len(cluster.processes) == 3 and all(p.poll() is None for p in cluster.processes):
            _cancel_all(cluster)  # else slurmstepd (not a child of slurmd) outlives the cluster with its job
        for process in reversed(cluster.processes):
            _stop(process)


def _cancel_all(cluster: Cluster) -> None:
    try:
        cluster.run("scancel", "--full", "--state=RUNNING", check=False)
        cluster.run("scancel", "--full", "--state=PENDING", check=False)
        cluster.wait_for(lambda: not [j for j in cluster.jobs() if j["state"] in ("RUNNING", "PENDING",
                                                                                 "COMPLETING", "CONFIGURING")],
                         60, "the jobs to end")
    except (TimeoutError, RuntimeError, subprocess.TimeoutExpired):
        pass
