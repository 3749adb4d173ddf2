#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, from Debian's packages (slurm-wlm, munge), for the Slurm tests
# (tests/pipeline/test_slurm_*.py) and for trying `executor: {kind: slurm}` by hand.
#
#   scripts/slurm-up.sh          # as root: install when missing, write /etc/slurm/slurm.conf, start munged,
#                                # slurmctld and slurmd; idempotent (a second call changes nothing)
#   scripts/slurm-up.sh --check  # exit 0 when the cluster answers and its node is up, else 1 (any user)
#
# The node offers this machine's CPUs and memory (`slurmd -C`). Slurm 22.05 starts in a VM or container with
# proctrack/linuxproc and task/none (no cgroup.conf). Accounting is off; Slurm's own record of each finished job
# is the job completion log (jobcomp/filetxt) at $CAPTRACK_SLURM_JOBCOMP (default /var/log/slurm/jobcomp.log).
# A slurm.conf this script did not write is left alone (it is used as it is).
set -euo pipefail

CONF=/etc/slurm/slurm.conf
JOBCOMP=${CAPTRACK_SLURM_JOBCOMP:-/var/log/slurm/jobcomp.log}
MARK="# written by captrack scripts/slurm-up.sh"

say() { echo "slurm-up: $*"; }

node_up() {
  command -v sinfo >/dev/null 2>&1 || return 1
  scontrol ping >/dev/null 2>&1 || return 1
  local state
  state=$(sinfo -h -N -o %T 2>/dev/null | head -1)
  [[ "$state" =~ ^(idle|mixed|allocated|completing) ]]
}

if [[ "${1:-}" == "--check" ]]; then
  node_up
  exit $?
fi

if [[ "$(id -u)" != 0 ]]; then
  if node_up; then say "a Slurm cluster is already running"; exit 0; fi
  say "not root: cannot install or start Slurm (the Slurm tests will be skipped)"
  exit 0
fi

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  say "installing slurm-wlm and munge (Debian packages)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null; }
fi

# munge: the key, then the daemon (Slurm authenticates every call through it).
if [[ ! -s /etc/munge/munge.key ]]; then
  mungekey --create --keyfile=/etc/munge/munge.key
  chown munge:munge /etc/munge/munge.key
  chmod 600 /etc/munge/munge.key
fi
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  say "starting munged"
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
fi

# slurm.conf: this machine as the one node, its CPUs and memory as slurmd sees them.
host=$(hostname -s)
read -r cpus memory < <(slurmd -C | awk '/^NodeName/ {for (i = 1; i <= NF; i++) { split($i, kv, "=");
  if (kv[1] == "CPUs") c = kv[2]; if (kv[1] == "RealMemory") m = kv[2] } print c, m }')
wanted=$(cat <<EOF
$MARK
ClusterName=captrack
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=$((memory / cpus))
ReturnToService=2
JobRequeue=1
MinJobAge=600
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$JOBCOMP
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$host CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
)
changed=0
if [[ -f "$CONF" ]] && ! grep -qF "$MARK" "$CONF"; then
  say "$CONF was not written by this script: using it as it is"
elif [[ ! -f "$CONF" ]] || [[ "$(cat "$CONF")" != "$wanted" ]]; then
  say "writing $CONF ($host: $cpus CPUs, $memory MB)"
  printf '%s\n' "$wanted" >"$CONF"
  changed=1
fi
mkdir -p /var/spool/slurmctld /var/spool/slurmd /var/log/slurm "$(dirname "$JOBCOMP")"

running() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
if (( changed )) && running /run/slurmctld.pid; then
  say "configuration changed: scontrol reconfigure"
  scontrol reconfigure || true
fi
if ! running /run/slurmctld.pid; then say "starting slurmctld"; /usr/sbin/slurmctld; fi
if ! running /run/slurmd.pid; then say "starting slurmd"; /usr/sbin/slurmd; fi

for _ in $(seq 60); do
  scontrol ping >/dev/null 2>&1 && break
  sleep 0.5
done
state=$(sinfo -h -N -o %T 2>/dev/null | head -1 || true)
if [[ "$state" =~ ^(down|drain|drained|draining|unknown) ]] || [[ "$state" == *'*'* ]]; then
  scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true
fi
for _ in $(seq 60); do
  node_up && { say "up: node $host ($cpus CPUs, $memory MB), partition debug; jobs' final states in $JOBCOMP"; exit 0; }
  sleep 0.5
done
say "slurmctld or slurmd did not come up; see /var/log/slurm/slurmctld.log and slurmd.log"
sinfo -N || true
exit 1
