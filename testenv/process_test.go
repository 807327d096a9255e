package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// helperEnv makes the test binary act as a test process that uses testenv,
// for the tests below that need one they can run twice at once or kill.
const helperEnv = "TESTENV_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		if err := helper(mode); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helper "build" builds, through the path Start takes to the server
// program, a tiny program instead (tinySource) and prints its path; helper
// "start" starts a server, asks it for its version and stops it; helper
// "hold" starts one, prints its process ID, address and directory and
// waits to be killed; helper "interrupt" starts one, prints its process
// ID, and asks it for its version again after an interrupt (SIGINT).
func helper(mode string) error {
	ctx := context.Background()
	if mode == "echo" {
		// A stand-in for the server program's command loop: it answers
		// every command with a report naming it, and exits on "stop".
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() && sc.Text() != "stop" {
			fmt.Printf("{\"host\":%q}\n", sc.Text())
		}
		return nil
	}
	if mode == "build" {
		source = tinySource
		bin, err := build(ctx, os.Stderr)
		fmt.Printf("bin=%s\n", bin)
		return err
	}
	if mode == "interrupt" {
		// A program that handles Ctrl-C itself, to clean up against its
		// server before it stops it.
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt)
		defer stop()
	}
	env, err := Start(context.WithoutCancel(ctx), Options{})
	if err != nil {
		return err
	}
	defer env.Stop()
	c, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		return err
	}
	if _, err := c.Discovery().ServerVersion(); err != nil {
		return err
	}
	switch mode {
	case "start":
		bin, err := build(ctx, io.Discard)
		fmt.Printf("bin=%s\n", bin)
		return err
	case "interrupt":
		fmt.Printf("%d\n", env.PID())
		<-ctx.Done()
		_, err := c.Discovery().ServerVersion()
		fmt.Printf("after the interrupt: %v\n", err)
		return err
	case "hold":
		fmt.Printf("%d %s %s\n", env.PID(), env.Config().Host, env.dir)
		time.Sleep(time.Hour) // until the test kills this process
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

func helperCmd(t *testing.T, mode string, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+mode), env...)
	return cmd
}

// tinySource stands for the server program's source in the build tests:
// the same files, built the same way (the build constraint cut, GOWORK
// off, into a locked cache entry), in seconds instead of a 3 GB link of
// the server, which the apiserver stage of make test builds from the real
// source whenever that source or Go changes (the cache key).
// useTinySource makes Build build tinySource until the test ends, and
// returns the cache key it builds it under.
func useTinySource(t *testing.T) (key string) {
	t.Helper()
	old := source
	source = tinySource
	t.Cleanup(func() { source = old })
	goBin, err := goCommand()
	if err != nil {
		t.Fatal(err)
	}
	if key, err = cacheKey(t.Context(), goBin); err != nil {
		t.Fatal(err)
	}
	return key
}

var tinySource = fstest.MapFS{
	"apiserver/main.go":    {Data: []byte("//go:build ignore\n\npackage main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"tiny test API server\") }\n")},
	"apiserver/go.mod.txt": {Data: []byte("module example.com/tiny\n\ngo 1.26.0\n")},
	"apiserver/go.sum.txt": {Data: []byte("")},
}

// TestConcurrentFirstBuild starts two test processes at once on an empty
// cache: one builds the program, the other waits for it, and both get the
// same binary, built from the source.
func TestConcurrentFirstBuild(t *testing.T) {
	t.Parallel() // its own cache directory, its own processes
	if os.Getenv(EnvAPIServer) != "" {
		t.Skipf("%s is set: testenv builds nothing", EnvAPIServer)
	}
	cache := t.TempDir()
	type result struct {
		stdout, stderr bytes.Buffer
		err            error
	}
	results := make([]*result, 2)
	done := make(chan struct{})
	for i := range results {
		r := &result{}
		results[i] = r
		cmd := helperCmd(t, "build", EnvCacheDir+"="+cache)
		cmd.Stdout, cmd.Stderr = &r.stdout, &r.stderr
		go func() {
			r.err = cmd.Run()
			done <- struct{}{}
		}()
	}
	<-done
	<-done
	builds, bins := 0, map[string]bool{}
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("process %d: %v\nstderr:\n%s", i, r.err, &r.stderr)
		}
		builds += strings.Count(r.stderr.String(), "testenv: building the test API server")
		bins[strings.TrimSpace(strings.TrimPrefix(r.stdout.String(), "bin="))] = true
	}
	if builds != 1 {
		t.Errorf("the two processes built the server %d times, want 1\nstderr 0:\n%s\nstderr 1:\n%s", builds, &results[0].stderr, &results[1].stderr)
	}
	if len(bins) != 1 {
		t.Errorf("the two processes ran different programs: %v", bins)
	}
	for bin := range bins {
		if !strings.HasPrefix(bin, cache) || !executable(bin) {
			t.Errorf("program %q is not an executable in the cache %s", bin, cache)
			continue
		}
		if out, err := exec.CommandContext(t.Context(), bin).Output(); err != nil || string(out) != "tiny test API server\n" {
			t.Errorf("program %s printed %q, %v; want the built source's line", bin, out, err)
		}
	}
}

// TestServerDiesWithTestProcess SIGKILLs a test process that runs a server:
// the server process exits, its port closes and its directory goes.
func TestServerDiesWithTestProcess(t *testing.T) {
	t.Parallel() // a test process and server of its own
	cmd := helperCmd(t, "hold")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper printed no line: %v\nstderr:\n%s", err, &stderr)
	}
	var pid int
	var host, dir string
	if _, err := fmt.Sscan(line, &pid, &host, &dir); err != nil {
		t.Fatalf("parse %q: %v", line, err)
	}
	if !alive(pid) {
		t.Fatalf("server process %d is not running before the kill", pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return !alive(pid), nil
	})
	if err != nil {
		t.Fatalf("server process %d still running 30 s after its test process was killed", pid)
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(host, "https://"), time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after the server process exited", host)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory %s left behind: stat error = %v", dir, err)
	}
}

// TestStopEndsTheProcess checks that Stop ends the server process and
// removes its directory, and that the Env refuses work afterwards.
func TestStopEndsTheProcess(t *testing.T) {
	t.Parallel() // a server of its own
	env := New(t)
	pid, dir := env.PID(), env.dir
	env.Stop()
	if alive(pid) {
		t.Errorf("server process %d still running after Stop", pid)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory %s left behind: stat error = %v", dir, err)
	}
	if env.PID() != 0 {
		t.Errorf("PID() after Stop = %d, want 0", env.PID())
	}
	if err := env.RestartAPIServer(t.Context()); !errors.Is(err, ErrStopped) {
		t.Errorf("RestartAPIServer after Stop: err = %v, want ErrStopped", err)
	}
	files := t.TempDir()
	crd := filepath.Join(files, "crd.json")
	cm := filepath.Join(files, "cm.json")
	if err := os.WriteFile(crd, []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"xs.x.io"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cm, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := env.InstallCRDs(t.Context(), crd); !errors.Is(err, ErrStopped) {
		t.Errorf("InstallCRDs after Stop: err = %v, want ErrStopped", err)
	}
	if _, err := env.Apply(t.Context(), cm); !errors.Is(err, ErrStopped) {
		t.Errorf("Apply after Stop: err = %v, want ErrStopped", err)
	}
	if _, err := env.WaitReady(t.Context(), schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "default", "x"); !errors.Is(err, ErrStopped) {
		t.Errorf("WaitReady after Stop: err = %v, want ErrStopped", err)
	}
}

// TestLateReports: a report that comes after waitReady gave up (the
// caller's context ended while the server started: a deadline that also
// covered a cold build, say) is not taken as the answer to the next
// command, and reports that nobody waits for do not keep stop from seeing
// the program exit (they did: Stop hung for ever over a zombie).
func TestLateReports(t *testing.T) {
	t.Setenv(helperEnv, "echo") // not parallel: its children inherit the environment
	p, err := startProcess(os.Args[0], []string{"-test.run=^$"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	stop := func() {
		go func() { p.stop(10 * time.Second); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(time.Minute):
			t.Fatal("stop did not return within a minute of a program that exits on stop")
		}
	}

	gone, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := p.waitReady(gone, time.Minute); err == nil {
		t.Fatal("waitReady with an ended context: no error")
	}
	for _, cmd := range []string{"first", "second"} {
		if err := p.send(cmd); err != nil {
			t.Fatal(err)
		}
	}
	host, err := p.waitReady(t.Context(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if host != "second" {
		t.Errorf("waitReady after one that gave up = %q, want %q (the report of the command after it)", host, "second")
	}

	// More reports than anyone waits for, or than the reader buffers.
	for i := range 2 * cap(p.lines) {
		if err := p.send(fmt.Sprint("unread-", i)); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	if p.err != nil {
		t.Errorf("program exit: %v%s", p.err, p.stderr.suffix())
	}
	if alive(p.cmd.Process.Pid) {
		t.Errorf("program %d still running after stop", p.cmd.Process.Pid)
	}
}

// alive reports whether pid runs; a zombie (exited, not reaped yet by
// whatever adopted it) does not count.
func alive(pid int) bool {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return processExists(pid) // no procfs: zombies count as alive
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 8}
	if got := b.suffix(); got != "" {
		t.Errorf("empty suffix = %q, want \"\"", got)
	}
	fmt.Fprint(b, "0123456789")
	fmt.Fprint(b, "ab")
	if got := string(b.buf); got != "456789ab" {
		t.Errorf("tail = %q, want the last 8 bytes %q", got, "456789ab")
	}
}

// TestSharedBuildFlags: the server's build takes -trimpath and -gcflags
// from the caller's GOFLAGS (the last of each), and nothing else.
func TestSharedBuildFlags(t *testing.T) {
	for goflags, want := range map[string][]string{
		"":                                nil,
		"-mod=mod":                        nil,
		"-trimpath":                       {"-trimpath"},
		"--trimpath":                      {"-trimpath"},
		"-buildvcs=false -trimpath":       {"-trimpath"},
		"-trimpath=true -mod=vendor":      {"-trimpath"},
		"-trimpath -trimpath=false":       nil,
		"-trimpath=false":                 nil,
		"-trimpath=1":                     {"-trimpath"},
		"-trimpath=maybe":                 nil,
		"-trimpathx -gcflags=-trimpath=a": {"-gcflags=-trimpath=a"},
		"-trimpath -gcflags=all=-dwarf=false -ldflags=-w": {"-trimpath", "-gcflags=all=-dwarf=false"},
		"--gcflags=-N -gcflags=all=-l":                    {"-gcflags=all=-l"},
		`-gcflags="all=-N -l"`:                            nil,
		"-gcflags=":                                       {"-gcflags="},
		`-gcflags=-N -gcflags="all=-N -l"`:                nil,
	} {
		if got := sharedBuildFlags(goflags); !slices.Equal(got, want) {
			t.Errorf("sharedBuildFlags(%q) = %q, want %q", goflags, got, want)
		}
	}
}

// TestBuildEnv: the server's build runs with GOGC=400 unless the caller
// sets GOGC (its own value is kept, "off" included), on its own module and
// without the caller's GOFLAGS; the caller's environment is not changed.
func TestBuildEnv(t *testing.T) {
	last := func(env []string, name string) (string, bool) {
		for i := len(env) - 1; i >= 0; i-- { // exec uses the last value of a name
			if v, ok := strings.CutPrefix(env[i], name+"="); ok {
				return v, true
			}
		}
		return "", false
	}
	for _, tc := range []struct {
		environ []string
		gogc    string
	}{
		{[]string{"HOME=/h", "GOFLAGS=-mod=vendor"}, buildGOGC},
		{[]string{"HOME=/h", "GOGC=50"}, "50"},
		{[]string{"GOGC=off", "GOWORK=/w/go.work"}, "off"},
		{[]string{"GOGC="}, ""},
	} {
		environ := slices.Clone(tc.environ)
		env := buildEnv(environ)
		if got, _ := last(env, "GOGC"); got != tc.gogc {
			t.Errorf("buildEnv(%q): GOGC=%q, want %q", tc.environ, got, tc.gogc)
		}
		for name, want := range map[string]string{"GOWORK": "off", "GOFLAGS": "", "GO111MODULE": "on"} {
			if got, ok := last(env, name); !ok || got != want {
				t.Errorf("buildEnv(%q): %s=%q, want %q", tc.environ, name, got, want)
			}
		}
		if !slices.Equal(environ, tc.environ) {
			t.Errorf("buildEnv changed its argument to %q", environ)
		}
		if v, ok := last(env, "HOME"); slices.Contains(tc.environ, "HOME=/h") && (!ok || v != "/h") {
			t.Errorf("buildEnv(%q) lost HOME: %q", tc.environ, env)
		}
	}
}
