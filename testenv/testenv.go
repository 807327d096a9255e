package testenv

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Defaults used by Start.
const (
	// DefaultStartTimeout bounds how long Start waits for etcd and for /readyz
	// once the server program is built.
	DefaultStartTimeout = 2 * time.Minute
	// DefaultStopTimeout bounds how long Stop waits for the server process to
	// shut down before it kills it.
	DefaultStopTimeout = 15 * time.Second
	// AdminUser is the user name of the identity returned by Env.Config. It is
	// in the system:masters group, which every authorizer allows.
	AdminUser = "testenv-admin"
	// MastersGroup is the group Kubernetes allows everything.
	MastersGroup = "system:masters"
)

// ErrStopped is returned by methods of an Env after Stop.
var ErrStopped = errors.New("testenv: stopped")

// Options configures Start. The zero value is a quiet server with AlwaysAllow
// authorization.
type Options struct {
	// LogOutput receives the logs of the API server (klog) and of etcd at
	// error level. Nil discards them: testenv is quiet by default.
	LogOutput io.Writer
	// RBAC turns on RBAC authorization (Node,RBAC modes). The admin identity
	// from Config stays allowed everything; identities from UserConfig need
	// RBAC rules. Without RBAC every authenticated identity is allowed
	// everything.
	RBAC bool
	// Dir is the parent of the temporary directory that holds etcd's data,
	// certificates and keys. Empty means os.TempDir. Start removes the
	// directories there that a killed process and its server left behind
	// (where flock is available; see the package doc).
	Dir string
	// StartTimeout bounds each start of etcd and of the API server, and each
	// RestartAPIServer. Defaults to DefaultStartTimeout. It does not bound the
	// first build of the server program (see Build).
	StartTimeout time.Duration
	// BuildOutput receives the progress of the first build of the server
	// program. Nil means os.Stderr, so that a long first build says what it
	// is doing.
	BuildOutput io.Writer
	// CRDs are paths of CustomResourceDefinition manifests, files or
	// directories (config/crd/bases, as controller-gen writes it), that
	// Start installs once the server is ready, and waits for until their
	// resources are served (see InstallCRDs and ReadCRDs). Start reads and
	// checks them before it builds or starts anything: a missing path, a
	// file named here that holds anything but v1 CRDs, or a directory
	// without one fails it at once.
	CRDs []string
}

// Env is a running kube-apiserver with its own embedded etcd, in a child
// process of this one. Its methods are safe for concurrent use.
type Env struct {
	opts     Options
	dir      string
	servCA   *authority
	clientCA *authority
	admin    *rest.Config

	mu        sync.Mutex // serialises Restart and Stop
	stopped   bool
	proc      *process
	unlockDir func() // lets other processes' Start remove dir (see lockDir)
}

// Start builds the server program if it is not in the cache yet (see
// Build), starts it on random loopback ports and returns once /readyz
// answers ok and the CRDs of Options.CRDs are served. ctx bounds the
// start; its deadline does not bound the first build, its cancellation
// does (a deadline that passes during the build lets it finish into the
// cache, and Start then fails without starting the server: give a first
// start no deadline, or call Build before it). The server runs until Stop,
// or until this process exits: it never
// outlives its parent. On error everything started so far is stopped
// again.
func Start(ctx context.Context, opts Options) (*Env, error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.StartTimeout < 0 {
		return nil, fmt.Errorf("testenv: Options.StartTimeout must not be negative, got %s", opts.StartTimeout)
	}
	if opts.BuildOutput == nil {
		opts.BuildOutput = os.Stderr
	}
	var crds []manifest
	if len(opts.CRDs) > 0 {
		var err error
		if crds, err = readCRDs(opts.CRDs); err != nil {
			return nil, fmt.Errorf("testenv: Options.CRDs: %w", err)
		}
	}
	bin, err := build(ctx, opts.BuildOutput)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		// The build outlives a deadline (it is cached for the next start);
		// the start does not.
		return nil, fmt.Errorf("testenv: start apiserver: the context ended before the start (a deadline that also covers a first build of the server program is too short): %w", context.Cause(ctx))
	}
	removeStaleDirs(opts.Dir)
	dir, err := os.MkdirTemp(opts.Dir, "testenv-")
	if err != nil {
		return nil, fmt.Errorf("testenv: create temp dir: %w", err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	e := &Env{opts: opts, dir: dir, unlockDir: unlock}
	if err := e.start(ctx, bin); err != nil {
		e.Stop()
		return nil, err
	}
	if len(crds) > 0 {
		if err := e.installCRDs(ctx, crds); err != nil {
			e.Stop()
			return nil, err
		}
	}
	return e, nil
}

func (e *Env) start(ctx context.Context, bin string) error {
	var err error
	if e.servCA, err = newAuthority("testenv-serving-ca"); err != nil {
		return err
	}
	if e.clientCA, err = newAuthority("testenv-client-ca"); err != nil {
		return err
	}
	servCert, servKey, err := e.servCA.issueServing()
	if err != nil {
		return err
	}
	adminCert, adminKey, err := e.clientCA.issueClient(AdminUser, []string{MastersGroup})
	if err != nil {
		return err
	}
	saKey, err := newServiceAccountKey()
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"serving.crt":    servCert,
		"serving.key":    servKey,
		"serving-ca.crt": e.servCA.certPEM,
		"client-ca.crt":  e.clientCA.certPEM,
		"admin.crt":      adminCert,
		"admin.key":      adminKey,
		"sa.key":         saKey,
	} {
		if err := writeFile(filepath.Join(e.dir, name), data); err != nil {
			return fmt.Errorf("testenv: %w", err)
		}
	}
	args := []string{"--dir", e.dir, "--start-timeout", e.opts.StartTimeout.String()}
	if e.opts.RBAC {
		args = append(args, "--rbac")
	}
	if e.opts.LogOutput != nil {
		args = append(args, "--logs")
	}
	p, err := startProcess(bin, args, e.opts.LogOutput)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.proc = p
	e.mu.Unlock()
	host, err := p.waitReady(ctx, e.opts.StartTimeout)
	if err != nil {
		return err
	}
	e.admin = &rest.Config{
		Host:            host,
		TLSClientConfig: rest.TLSClientConfig{CAData: e.servCA.certPEM, CertData: adminCert, KeyData: adminKey},
		QPS:             1000,
		Burst:           2000,
	}
	return nil
}

// Config returns a new copy of the admin *rest.Config (user AdminUser in the
// system:masters group, client-certificate authentication). The copy stays
// valid across RestartAPIServer, which keeps address and certificates.
func (e *Env) Config() *rest.Config {
	return rest.CopyConfig(e.admin)
}

// UserConfig returns a *rest.Config that authenticates as user, member of
// groups, with a client certificate signed by the API server's client CA.
// It is how tests get a non-admin identity: with Options.RBAC the identity
// can do only what RBAC rules grant it.
func (e *Env) UserConfig(user string, groups ...string) (*rest.Config, error) {
	if user == "" {
		return nil, errors.New("testenv: UserConfig: user must not be empty")
	}
	certPEM, keyPEM, err := e.clientCA.issueClient(user, groups)
	if err != nil {
		return nil, fmt.Errorf("testenv: issue certificate for %q: %w", user, err)
	}
	cfg := rest.CopyConfig(e.admin)
	cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData = certPEM, keyPEM
	return cfg, nil
}

// PID returns the process ID of the API server process, for benchmarks that
// pin it to a CPU or measure its resource use. It is 0 after Stop.
func (e *Env) PID() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped || e.proc == nil {
		return 0
	}
	return e.proc.cmd.Process.Pid
}

// WriteKubeconfig writes a kubeconfig for the admin identity to path (mode
// 0600), so that kubectl or another process can connect while Env runs.
func (e *Env) WriteKubeconfig(path string) error {
	return WriteKubeconfig(path, e.admin)
}

// WriteKubeconfig writes cfg (host, CA, client certificate or token) as a
// kubeconfig file with one context named "testenv".
func WriteKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["testenv"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.TLSClientConfig.CAData,
		TLSServerName:            cfg.TLSClientConfig.ServerName,
	}
	kc.AuthInfos["testenv"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.TLSClientConfig.CertData,
		ClientKeyData:         cfg.TLSClientConfig.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: "testenv", Namespace: "default"}
	kc.CurrentContext = "testenv"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("testenv: write kubeconfig %s: %w", path, err)
	}
	return nil
}

// RestartAPIServer stops the kube-apiserver and starts a new one on the same
// address, with the same etcd (so the same data), certificates and keys.
// Clients built from Config keep working once it is back; watches break and
// must be re-established, as on a real control-plane restart. It returns
// when the new server is ready.
func (e *Env) RestartAPIServer(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return ErrStopped
	}
	if err := e.proc.send("restart"); err != nil {
		return err
	}
	host, err := e.proc.waitReady(ctx, e.opts.StartTimeout)
	if err != nil {
		return err
	}
	if host != e.admin.Host {
		return fmt.Errorf("testenv: restarted apiserver serves %s, want %s", host, e.admin.Host)
	}
	return nil
}

// Stop stops the API server and etcd and removes the temporary directory.
// It waits up to DefaultStopTimeout for the server process to exit, then
// kills it. Calling it again does nothing.
func (e *Env) Stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return
	}
	e.stopped = true
	if e.proc != nil {
		e.proc.stop(DefaultStopTimeout)
	}
	os.RemoveAll(e.dir)
	e.unlockDir()
}

// TB is the part of testing.TB that New uses.
type TB interface {
	// Helper marks New as a test helper, as testing.TB's does.
	Helper()
	// Fatalf is called once when the Env cannot start, and must end the
	// test, as testing.TB's does.
	Fatalf(format string, args ...any)
	// Cleanup registers Env.Stop, to run when the test ends.
	Cleanup(func())
	// Context bounds the start of the Env (building the server program
	// included, the first time).
	Context() context.Context
}

// New starts an Env for a test and stops it in t.Cleanup. It fails the test
// when the server does not start. opts is optional; at most one is used.
func New(t TB, opts ...Options) *Env {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	e, err := Start(t.Context(), o)
	if err != nil {
		t.Fatalf("start test environment: %v", err)
	}
	t.Cleanup(e.Stop)
	return e
}

// process is the running server program and the pipes to it.
type process struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// lines holds what the program reports on stdout, one report per start
	// or restart, until waitReady takes it.
	lines chan message
	// late counts the reports that waitReady gave up waiting for (its
	// context ended, or the start took too long): they may still come, and
	// are not the answer to a later command. Only the goroutine calling
	// waitReady (serialized by Env) touches it.
	late int
	// stopping is closed by stop: from then on no report is waited for,
	// and the reader drains the program's stdout until it exits.
	stopping chan struct{}
	exited   chan struct{} // closed when the program has exited
	err      error         // its exit status, once exited is closed
	stderr   *tailBuffer   // the end of its stderr, for error messages
}

// message is one line of the program's stdout.
type message struct {
	Host    string `json:"host"`
	Error   string `json:"error"`
	Warning string `json:"warning"`
}

func startProcess(bin string, args []string, logs io.Writer) (*process, error) {
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = sysProcAttr()
	p := &process{cmd: cmd, lines: make(chan message, 4), stopping: make(chan struct{}), exited: make(chan struct{}), stderr: &tailBuffer{max: 8 << 10}}
	cmd.Stderr = p.stderr
	if logs != nil {
		cmd.Stderr = io.MultiWriter(p.stderr, logs)
	}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("testenv: start %s: %w", bin, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var m message
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Warning != "" {
				continue
			}
			// Never blocks for ever: a report nobody waits for (its
			// waitReady gave up) stays in the buffer, and once stop
			// began nothing is delivered, so that the program's exit is
			// always seen.
			select {
			case p.lines <- m:
			case <-p.stopping:
			}
		}
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// waitReady waits for the program's next report: the address it serves on
// once /readyz answered, or why it could not start.
// A report that comes after an earlier call gave up is skipped: it answers
// an earlier command, not the last one.
func (p *process) waitReady(ctx context.Context, timeout time.Duration) (string, error) {
	timer := time.NewTimer(timeout + 10*time.Second) // the program bounds its own start
	defer timer.Stop()
	for {
		select {
		case m := <-p.lines:
			if p.late > 0 {
				p.late--
				continue
			}
			if m.Error != "" {
				return "", fmt.Errorf("testenv: apiserver: %s", m.Error)
			}
			return m.Host, nil
		case <-p.exited:
			// A report sent just before the exit may still be buffered.
			if len(p.lines) > p.late {
				continue
			}
			return "", fmt.Errorf("testenv: apiserver exited during start: %v%s", p.err, p.stderr.suffix())
		case <-timer.C:
			p.late++
			return "", fmt.Errorf("testenv: apiserver not ready after %s%s", timeout, p.stderr.suffix())
		case <-ctx.Done():
			p.late++
			return "", fmt.Errorf("testenv: start apiserver: %w", context.Cause(ctx))
		}
	}
}

func (p *process) send(cmd string) error {
	select {
	case <-p.exited:
		return fmt.Errorf("testenv: apiserver has exited: %v%s", p.err, p.stderr.suffix())
	default:
	}
	if _, err := io.WriteString(p.stdin, cmd+"\n"); err != nil {
		return fmt.Errorf("testenv: send %q to apiserver: %w", cmd, err)
	}
	return nil
}

// stop asks the program to shut down, closes its stdin (which alone would
// make it shut down) and kills it if it has not exited within timeout.
func (p *process) stop(timeout time.Duration) {
	close(p.stopping)
	_ = p.send("stop")
	p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// suffix returns ": <last stderr lines>" or "" when nothing was written.
func (b *tailBuffer) suffix() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) == 0 {
		return ""
	}
	return "; its stderr ends with:\n" + string(b.buf)
}
