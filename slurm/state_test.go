package slurm

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The captures are what Slurm 22.05's squeue and scontrol printed on the test cluster
// (TestCaptureFixtures, -capture, rewrites them).

func capture(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "captures", name))
	require.NoError(t, err)
	return string(data)
}

func TestParseCapturedScontrol(t *testing.T) {
	cases := []struct {
		file     string
		state    string
		reason   string
		exit     int
		signal   int
		nodeList string
		ran      bool
	}{
		{"completed", StateCompleted, "", 0, 0, "vm", true},
		{"failed", StateFailed, "NonZeroExitCode", 3, 0, "vm-n2", true},
		{"signalled", StateFailed, "JobLaunchFailure", 0, 9, "vm", true},
		{"cancelled", StateCancelled, "", 0, 15, "vm,vm-n2", true},
		{"running", StateRunning, "", 0, 0, "vm,vm-n2", true},
		{"held", StatePending, "JobHeldUser", 0, 0, "", false},
		{"resources", StatePending, "Resources", 0, 0, "", false},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			kv := parseScontrol(capture(t, c.file+".scontrol.txt"))
			f, ok, err := finalFromScontrol("7", kv)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, c.state, f.State)
			assert.Equal(t, c.reason, f.Reason)
			assert.Equal(t, c.exit, f.ExitCode)
			assert.Equal(t, c.signal, f.Signal)
			assert.Equal(t, c.nodeList, f.NodeList)
			assert.Equal(t, c.ran, !f.Start.IsZero(), "StartTime")
			assert.Equal(t, "root(0)", kv["UserId"])

			q, found, err := parseSqueue(capture(t, c.file+".squeue.txt"))
			require.NoError(t, err)
			require.True(t, found)
			assert.Equal(t, queued{State: c.state, Reason: orNone(c.reason), NodeList: c.nodeList}, q)
		})
	}
	_, ok, err := finalFromScontrol("7", parseScontrol(capture(t, "unknown.scontrol.txt")))
	assert.NoError(t, err)
	assert.False(t, ok)
}

func orNone(s string) string {
	if s == "" {
		return "None"
	}
	return s
}

func TestParseScontrolSpaces(t *testing.T) {
	kv := parseScontrol("JobId=5 JobName=my job name JobState=RUNNING Command=/a b/c.sh WorkDir=/x")
	assert.Equal(t, "my job name", kv["JobName"])
	assert.Equal(t, "/a b/c.sh", kv["Command"])
	assert.Equal(t, "RUNNING", kv["JobState"])
}

func TestFinalFromSacct(t *testing.T) {
	// sacct -n -P -X -o JobID,State,ExitCode,NodeList,Elapsed,Start,End,Reason, as documented.
	out := "41|CANCELLED by 0|0:15|gpu[01-02]|00:01:05|2026-11-22T10:00:00|2026-11-22T10:01:05|None\n" +
		"42|NODE_FAIL|1:0|gpu[03-04]|1-02:03:04|2026-11-22T10:00:00|2026-11-23T12:03:04|NodeDown\n"
	f, ok, err := finalFromSacct("42", out)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, Final{JobID: "42", State: StateNodeFail, ExitCode: 1, NodeList: "gpu[03-04]",
		Elapsed: 26*time.Hour + 3*time.Minute + 4*time.Second, Reason: "NodeDown",
		Start: time.Date(2026, 11, 22, 10, 0, 0, 0, time.Local), End: time.Date(2026, 11, 23, 12, 3, 4, 0, time.Local)}, f)
	f, ok, err = finalFromSacct("41", out)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, StateCancelled, f.State)
	assert.Equal(t, 15, f.Signal)
	assert.Equal(t, "", f.Reason)
	_, ok, err = finalFromSacct("43", out)
	assert.NoError(t, err)
	assert.False(t, ok)
	_, _, err = finalFromSacct("41", "41|COMPLETED|0:0\n")
	assert.ErrorContains(t, err, "want 8")
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"00:00:01": time.Second, "05:07": 5*time.Minute + 7*time.Second, "2-00:00:00": 48 * time.Hour,
		"12:00:00": 12 * time.Hour, "00:00:01.500": 1500 * time.Millisecond, "": 0, "INVALID": 0,
	} {
		got, err := parseDuration(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"x", "1:2:3:4", "-1:00", "a-00:00:01", "00:-5"} {
		_, err := parseDuration(bad)
		assert.Error(t, err, bad)
	}
}

func TestParseExitCode(t *testing.T) {
	code, sig, err := parseExitCode("3:0")
	require.NoError(t, err)
	assert.Equal(t, [2]int{3, 0}, [2]int{code, sig})
	code, sig, err = parseExitCode("0:9")
	require.NoError(t, err)
	assert.Equal(t, [2]int{0, 9}, [2]int{code, sig})
	_, _, err = parseExitCode("x:1")
	assert.Error(t, err)
}

func TestParseSubmit(t *testing.T) {
	for in, want := range map[string]string{"123\n": "123", "123;cluster-a\n": "123",
		"sbatch: warning: something\n456\n": "456"} {
		got, err := parseSubmit(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got)
	}
	for _, bad := range []string{"", "Submitted batch job 5", "abc;x"} {
		_, err := parseSubmit(bad)
		assert.Error(t, err, bad)
	}
}

func TestJobErrorMessages(t *testing.T) {
	cases := []struct {
		f    Final
		want string
	}{
		{Final{JobID: "9", State: StateNodeFail, NodeList: "gpu[1-2]", FailedNodes: []string{"gpu2"}, Reason: "NodeDown"},
			"slurm: job 9 ended in NODE_FAIL: node failure on gpu2 (Slurm's reason: NodeDown) on nodes gpu[1-2]"},
		{Final{JobID: "9", State: StateNodeFail}, "a node of its allocation failed"},
		{Final{JobID: "9", State: StateFailed, ExitCode: 3, Elapsed: time.Minute}, "slurm: job 9 FAILED with exit code 3 after 1m0s"},
		{Final{JobID: "9", State: StateFailed, Signal: 9}, "killed by signal 9"},
		{Final{JobID: "9", State: StateTimeout}, "time limit"},
		{Final{JobID: "9", State: StateOutOfMemory}, "out of memory"},
		{Final{JobID: "9", State: StateCancelled}, "outside Rival"},
		{Final{JobID: "9", State: StateCancelled, Note: "cancelled by Rival on interrupt"}, "was CANCELLED: cancelled by Rival on interrupt"},
		{Final{JobID: "9", State: StatePreempted}, "ended in state PREEMPTED"},
	}
	for _, c := range cases {
		assert.Contains(t, (&JobError{Final: c.f}).Error(), c.want)
	}
}

func FuzzParseScontrol(f *testing.F) {
	for _, name := range []string{"completed", "failed", "held", "cancelled", "signalled"} {
		f.Add(capture(f, name+".scontrol.txt"))
	}
	f.Add("JobState= ExitCode=:: RunTime=1-")
	f.Fuzz(func(t *testing.T, s string) {
		kv := parseScontrol(s)
		fin, ok, err := finalFromScontrol("1", kv)
		if ok && err == nil && fin.Elapsed < 0 {
			t.Fatalf("negative elapsed from %q", s)
		}
	})
}

func FuzzParseSqueue(f *testing.F) {
	f.Add(capture(f, "running.squeue.txt"))
	f.Add("a|b\n")
	f.Fuzz(func(t *testing.T, s string) {
		q, ok, err := parseSqueue(s)
		if err == nil && ok && q.State != normState(q.State) {
			t.Fatalf("state %q not normalised", q.State)
		}
	})
}

func FuzzFinalFromSacct(f *testing.F) {
	f.Add("42|NODE_FAIL|1:0|gpu[03-04]|1-02:03:04|2026-11-22T10:00:00|2026-11-23T12:03:04|NodeDown\n")
	f.Fuzz(func(t *testing.T, s string) {
		fin, ok, err := finalFromSacct("42", s)
		if ok && err == nil && (fin.Elapsed < 0 || fin.ExitCode < 0 || fin.Signal < 0) {
			t.Fatalf("negative values from %q: %+v", s, fin)
		}
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"00:00:01", "2-00:00:00", "1:2", "99999999-99:99:99"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := parseDuration(s); err == nil && d < 0 {
			t.Fatalf("%q gave %v", s, d)
		}
	})
}

func TestParseDownNodes(t *testing.T) {
	// sinfo -h -N -o "%N|%t" as printed on the test cluster after a slurmd was killed.
	out := "vm|idle\nvm-n2|down*\ngpu3|drain\ngpu4|mix\ngpu5|fail\ngpu6|idle*\n"
	assert.Equal(t, []string{"vm-n2", "gpu3", "gpu5", "gpu6"}, parseDownNodes(out))
	assert.Empty(t, parseDownNodes(""))
}
