// Package slurmtest starts a real Slurm cluster on this host for tests: its own munged (own key and
// socket), slurmctld and one or more slurmd, all under a temporary directory with their own ports,
// from Debian's slurm-wlm and munge packages. Tests skip when those are missing or the test does not
// run as root; with RIVAL_REQUIRE_SLURM=1 (CI) they fail instead, so a broken setup cannot pass as a skip.
package slurmtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rivalbench/rival/slurm"
)

// RequireEnv names the variable that turns a missing Slurm into a test failure rather than a skip.
const RequireEnv = "RIVAL_REQUIRE_SLURM"

// Partition is the cluster's one (default) partition.
const Partition = "rival"

// Options shape the cluster.
type Options struct {
	// Nodes is the number of slurmd instances (Slurm nodes), all on this host; 0: 1. The first node is
	// named after the host (hostname -s), so a job's MASTER_ADDR resolves; the others are <host>-n2, ...
	Nodes int
}

// Cluster is a running test cluster.
type Cluster struct {
	Name  string   // ClusterName, unique per cluster so concurrent test clusters never share a name
	Dir   string   // the temporary directory holding everything; removed at the end
	Conf  string   // slurm.conf
	Nodes []string // node names, in order
	env   []string
	procs []*daemon
}

type daemon struct {
	name string
	cmd  *exec.Cmd
	out  string
	done chan struct{}
}

// binaries the cluster needs, with the package that ships each.
var binaries = []struct{ name, pkg string }{
	{"munged", "munge"}, {"munge", "munge"}, {"slurmctld", "slurm-wlm"}, {"slurmd", "slurm-wlm"},
	{"sbatch", "slurm-client"}, {"squeue", "slurm-client"}, {"scontrol", "slurm-client"},
	{"scancel", "slurm-client"}, {"sinfo", "slurm-client"}, {"srun", "slurm-client"},
}

// Available says why no cluster can start here, or "" when one can.
func Available() string {
	if os.Geteuid() != 0 {
		return "not running as root: slurmd must start jobs as any user, so the test cluster needs root"
	}
	var missing []string
	for _, b := range binaries {
		if _, err := exec.LookPath(b.name); err != nil {
			missing = append(missing, b.name+" ("+b.pkg+")")
		}
	}
	if len(missing) > 0 {
		return "Slurm is not installed: missing " + strings.Join(missing, ", ") + "; apt-get install slurm-wlm munge"
	}
	return ""
}

// Start starts a cluster and registers its teardown with t.Cleanup; it skips t (or fails it, with
// RIVAL_REQUIRE_SLURM=1) when Slurm cannot run here.
func Start(t testing.TB, opt Options) *Cluster {
	t.Helper()
	if why := Available(); why != "" {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("slurmtest: %s (%s=1 requires a real Slurm)", why, RequireEnv)
		}
		t.Skipf("slurmtest: %s (set %s=1 to make this a failure)", why, RequireEnv)
	}
	c, err := start(opt)
	if c != nil {
		t.Cleanup(func() {
			if err := c.stop(); err != nil {
				t.Errorf("slurmtest: stop: %v", err)
			}
		})
	}
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	return c
}

func start(opt Options) (*Cluster, error) {
	n := max(opt.Nodes, 1)
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("hostname: %w", err)
	}
	host, _, _ = strings.Cut(host, ".")
	// A short path: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "rival-slurm-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Name: "rival" + strings.ToLower(strings.TrimPrefix(filepath.Base(dir), "rival-slurm-")),
		Dir: dir, Conf: filepath.Join(dir, "slurm.conf")}
	// munged and slurmd refuse directories others could write to, and jobs (any user) must reach them.
	for _, d := range []string{dir, filepath.Join(dir, "munge"), filepath.Join(dir, "state"), filepath.Join(dir, "log"), filepath.Join(dir, "spool")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return c, err
		}
		if err := os.Chmod(d, 0o755); err != nil {
			return c, err
		}
	}
	for i := range n {
		name := host
		if i > 0 {
			name = fmt.Sprintf("%s-n%d", host, i+1)
		}
		c.Nodes = append(c.Nodes, name)
		if err := os.MkdirAll(filepath.Join(dir, "spool", name), 0o755); err != nil {
			return c, err
		}
	}

	// munged with its own key and socket: no system state is touched and clusters do not share one.
	key := make([]byte, 1024)
	if _, err := rand.Read(key); err != nil {
		return c, err
	}
	keyPath := filepath.Join(dir, "munge", "munge.key")
	if err := os.WriteFile(keyPath, key, 0o600); err != nil {
		return c, err
	}
	sock := filepath.Join(dir, "munge", "munge.socket")
	if err := c.spawn("munged", nil, "munged", "--force", "--foreground", "--socket="+sock, "--key-file="+keyPath,
		"--log-file="+filepath.Join(dir, "log", "munged.log"), "--pid-file="+filepath.Join(dir, "munge", "munged.pid"),
		"--seed-file="+filepath.Join(dir, "munge", "munged.seed")); err != nil {
		return c, err
	}
	if err := waitFor(10*time.Second, func() error {
		return exec.Command("munge", "-n", "-S", sock).Run()
	}); err != nil {
		return c, fmt.Errorf("munged did not answer on %s: %v\n%s", sock, err, c.logs())
	}

	ports, err := freePorts(1 + n)
	if err != nil {
		return c, err
	}
	conf, err := c.config(host, sock, ports)
	if err != nil {
		return c, err
	}
	if err := os.WriteFile(c.Conf, []byte(conf), 0o644); err != nil {
		return c, err
	}
	c.env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "SLURM_") || strings.HasPrefix(kv, "SBATCH_") || strings.HasPrefix(kv, "SQUEUE_")
	}), "SLURM_CONF="+c.Conf)

	if err := c.spawn("slurmctld", c.env, "slurmctld", "-D", "-c", "-i"); err != nil {
		return c, err
	}
	for _, node := range c.Nodes {
		if err := c.spawn("slurmd-"+node, c.env, "slurmd", "-D", "-c", "-N", node); err != nil {
			return c, err
		}
	}
	if err := waitFor(60*time.Second, c.allIdle); err != nil {
		return c, fmt.Errorf("nodes did not come up idle: %v\n%s", err, c.logs())
	}
	return c, nil
}

// config writes slurm.conf: everything under Dir, short timeouts, no cgroups, no accounting.
func (c *Cluster) config(host, sock string, ports []int) (string, error) {
	cpus, memMiB, err := machine()
	if err != nil {
		return "", err
	}
	n := len(c.Nodes)
	nodeCPUs := max(cpus/n, 1)
	// Below the machine's memory, so slurmd's registration never drains the node for low memory.
	nodeMem := min(max(memMiB/(2*n), 256), 8192)
	d := c.Dir
	var b strings.Builder
	fmt.Fprintf(&b, `# Rival test cluster, generated by slurmtest.
ClusterName=%s
SlurmctldHost=%s(127.0.0.1)
SlurmctldPort=%d
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%s
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%s/state
SlurmdSpoolDir=%s/spool/%%n
SlurmctldPidFile=%s/slurmctld.pid
SlurmdPidFile=%s/slurmd-%%n.pid
SlurmctldLogFile=%s/log/slurmctld.log
SlurmdLogFile=%s/log/slurmd-%%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SlurmdParameters=config_overrides
MailProg=/bin/true
ReturnToService=2
SlurmctldTimeout=10
SlurmdTimeout=10
MessageTimeout=5
InactiveLimit=0
KillWait=2
MinJobAge=300
`, c.Name, host, ports[0], sock, d, d, d, d, d, d)
	for i, node := range c.Nodes {
		fmt.Fprintf(&b, "NodeName=%s NodeHostname=%s NodeAddr=127.0.0.1 Port=%d CPUs=%d RealMemory=%d State=UNKNOWN\n",
			node, host, ports[1+i], nodeCPUs, nodeMem)
	}
	fmt.Fprintf(&b, "PartitionName=%s Nodes=%s Default=YES MaxTime=INFINITE State=UP\n", Partition, strings.Join(c.Nodes, ","))
	return b.String(), nil
}

// machine returns the host's CPU count and memory in MiB.
func machine() (int, int, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kib, err := strconv.Atoi(f[1])
			if err != nil {
				return 0, 0, fmt.Errorf("/proc/meminfo MemTotal %q: %w", f[1], err)
			}
			out, err := exec.Command("nproc").Output()
			if err != nil {
				return 0, 0, fmt.Errorf("nproc: %w", err)
			}
			cpus, err := strconv.Atoi(strings.TrimSpace(string(out)))
			if err != nil {
				return 0, 0, fmt.Errorf("nproc printed %q", out)
			}
			return cpus, kib / 1024, nil
		}
	}
	return 0, 0, errors.New("/proc/meminfo has no MemTotal")
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// spawn starts a daemon in the foreground, its output in log/<name>.out. It dies with the test
// process (Pdeathsig), so a killed test leaves no daemon behind.
func (c *Cluster) spawn(name string, env []string, argv ...string) error {
	out := filepath.Join(c.Dir, "log", name+".out")
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	f.Close()
	d := &daemon{name: name, cmd: cmd, out: out, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(d.done) }()
	c.procs = append(c.procs, d)
	return nil
}

func waitFor(limit time.Duration, try func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := try()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *Cluster) allIdle() error {
	for _, d := range c.procs {
		select {
		case <-d.done:
			return fmt.Errorf("%s exited", d.name)
		default:
		}
	}
	out, err := c.Command("sinfo", "-h", "-N", "-o", "%N %t").CombinedOutput()
	if err != nil {
		return fmt.Errorf("sinfo: %v: %s", err, out)
	}
	state := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			state[f[0]] = f[1]
		}
	}
	for _, n := range c.Nodes {
		if state[n] != "idle" {
			return fmt.Errorf("node %s is %q (sinfo: %s)", n, state[n], strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// logs returns the tail of every daemon's output, for failure messages.
func (c *Cluster) logs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(c.Dir, "log", "*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", f, data)
	}
	return b.String()
}

// Env is the environment the cluster's client tools need (the process's, with SLURM_CONF set).
func (c *Cluster) Env() []string { return slices.Clone(c.env) }

// Command prepares a Slurm client command against this cluster.
func (c *Cluster) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = c.Env()
	return cmd
}

// Client returns a slurm.Cluster for this cluster, polling fast as tests want.
func (c *Cluster) Client() slurm.Cluster {
	return slurm.Cluster{Env: c.Env(), Poll: 200 * time.Millisecond, CancelWait: 30 * time.Second}
}

// Queue returns the ids of the jobs slurmctld still has pending or running.
func (c *Cluster) Queue() ([]string, error) {
	out, err := c.Command("squeue", "-h", "-o", "%i").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("squeue: %v: %s", err, out)
	}
	return strings.Fields(string(out)), nil
}

// JobProcesses lists the processes of this cluster's jobs still alive: every process whose
// environment holds this cluster's SLURM_CONF and a SLURM_JOB_ID (batch scripts, steps, their children).
func (c *Cluster) JobProcesses() ([]Process, error) { return c.processes(true) }

// processes lists the processes whose environment holds this cluster's SLURM_CONF, only those of
// jobs when jobs is true.
func (c *Cluster) processes(jobs bool) ([]Process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	conf := []byte("SLURM_CONF=" + c.Conf + "\x00")
	var ps []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, conf) || (jobs && !bytes.Contains(env, []byte("\x00SLURM_JOB_ID="))) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		ps = append(ps, Process{PID: pid, Cmdline: strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))})
	}
	return ps, nil
}

// Process is one live process.
type Process struct {
	PID     int
	Cmdline string
}

// stop cancels every job, stops the daemons, kills what the jobs left, and removes Dir.
func (c *Cluster) stop() error {
	var errs []error
	if len(c.procs) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, "scancel", "--full", "--partition="+Partition)
		cmd.Env = c.env
		_ = cmd.Run()
		_ = waitFor(15*time.Second, func() error {
			ids, err := c.Queue()
			if err == nil && len(ids) > 0 {
				return fmt.Errorf("jobs %v still queued", ids)
			}
			return nil
		})
		cancel()
	}
	// Daemons in reverse start order: slurmd, slurmctld, munged.
	for i := len(c.procs) - 1; i >= 0; i-- {
		d := c.procs[i]
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.done
			errs = append(errs, fmt.Errorf("%s ignored SIGTERM for 10s and was killed", d.name))
		}
	}
	// slurmstepd outlives slurmd by design; whatever the cluster left is ours to end.
	if ps, err := c.processes(false); err == nil {
		for _, p := range ps {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// KillNode kills a node's slurmd with SIGKILL, as a crashed or unplugged node would stop answering.
// slurmctld marks the node DOWN after SlurmdTimeout (10 s here) and fails the jobs on it as NODE_FAIL.
// The node stays down for the rest of the cluster's life.
func (c *Cluster) KillNode(node string) error {
	for _, d := range c.procs {
		if d.name == "slurmd-"+node {
			if err := syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL); err != nil {
				return fmt.Errorf("kill slurmd of %s: %w", node, err)
			}
			<-d.done
			return nil
		}
	}
	return fmt.Errorf("no slurmd for node %q (nodes: %v)", node, c.Nodes)
}
