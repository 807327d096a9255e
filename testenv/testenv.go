package testenv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// Defaults used by Start.
const (
	// DefaultStartTimeout bounds how long Start waits for etcd and for /readyz.
	DefaultStartTimeout = 2 * time.Minute
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
	// certificates and keys. Empty means os.TempDir.
	Dir string
	// StartTimeout bounds each start of etcd and of the API server.
	// Defaults to DefaultStartTimeout.
	StartTimeout time.Duration
}

// Env is a running kube-apiserver with its own embedded etcd, both inside
// this process. Its methods are safe for concurrent use.
type Env struct {
	opts     Options
	dir      string
	port     int
	etcd     *embed.Etcd
	etcdURL  string
	servCA   *authority
	clientCA *authority
	admin    *rest.Config

	mu      sync.Mutex
	stopped bool
	cancel  context.CancelFunc // stops the running API server
	done    <-chan error       // receives the API server's exit
}

var klogOnce sync.Once

// quietKlog sends klog's output to w (io.Discard when nil). klog is process
// global, so the last Start wins.
func quietKlog(w io.Writer) {
	klogOnce.Do(func() {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("logtostderr", "false")
		_ = fs.Set("alsologtostderr", "false")
		_ = fs.Set("stderrthreshold", "FATAL")
		_ = fs.Set("one_output", "true")
	})
	if w == nil {
		w = io.Discard
	}
	klog.SetOutput(w)
}

// Start starts etcd and the kube-apiserver on random loopback ports and
// returns once /readyz answers ok. ctx bounds the start only: the servers run
// until Stop. Nothing is downloaded; both run in this process. On error
// everything started so far is stopped again.
func Start(ctx context.Context, opts Options) (*Env, error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.StartTimeout < 0 {
		return nil, fmt.Errorf("testenv: Options.StartTimeout must not be negative, got %s", opts.StartTimeout)
	}
	quietKlog(opts.LogOutput)

	dir, err := os.MkdirTemp(opts.Dir, "testenv-")
	if err != nil {
		return nil, fmt.Errorf("testenv: create temp dir: %w", err)
	}
	e := &Env{opts: opts, dir: dir}
	if err := e.start(ctx); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

func (e *Env) start(ctx context.Context) error {
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
	saKey, err := newServiceAccountKey()
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"serving.crt":   servCert,
		"serving.key":   servKey,
		"client-ca.crt": e.clientCA.certPEM,
		"sa.key":        saKey,
	} {
		if err := writeFile(filepath.Join(e.dir, name), data); err != nil {
			return fmt.Errorf("testenv: %w", err)
		}
	}
	if err := e.startEtcd(ctx); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("testenv: listen: %w", err)
	}
	e.port = ln.Addr().(*net.TCPAddr).Port

	certPEM, keyPEM, err := e.clientCA.issueClient(AdminUser, []string{MastersGroup})
	if err != nil {
		return err
	}
	e.admin = &rest.Config{
		Host:            "https://127.0.0.1:" + strconv.Itoa(e.port),
		TLSClientConfig: rest.TLSClientConfig{CAData: e.servCA.certPEM, CertData: certPEM, KeyData: keyPEM},
		QPS:             1000,
		Burst:           2000,
	}
	return e.startAPIServer(ctx, ln)
}

func (e *Env) startEtcd(ctx context.Context) error {
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(e.dir, "etcd")
	cfg.UnsafeNoFsync = true
	cfg.LogLevel = "error"
	if e.opts.LogOutput == nil {
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	} else {
		core := zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(e.opts.LogOutput), zapcore.ErrorLevel)
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(core))
	}
	u := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{u}, []url.URL{u}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{u}, []url.URL{u}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	etcd, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("testenv: start etcd: %w", err)
	}
	e.etcd = etcd
	timer := time.NewTimer(e.opts.StartTimeout)
	defer timer.Stop()
	select {
	case <-etcd.Server.ReadyNotify():
	case <-timer.C:
		return fmt.Errorf("testenv: etcd not ready after %s", e.opts.StartTimeout)
	case <-ctx.Done():
		return fmt.Errorf("testenv: start etcd: %w", context.Cause(ctx))
	}
	e.etcdURL = etcd.Clients[0].Addr().String()
	return nil
}

// startAPIServer builds and runs a kube-apiserver on ln and waits for /readyz.
func (e *Env) startAPIServer(ctx context.Context, ln net.Listener) error {
	s := options.NewServerRunOptions()
	s.SecureServing.Listener = ln
	s.SecureServing.BindPort = e.port
	s.SecureServing.ServerCert.CertKey.CertFile = filepath.Join(e.dir, "serving.crt")
	s.SecureServing.ServerCert.CertKey.KeyFile = filepath.Join(e.dir, "serving.key")
	s.SecureServing.ExternalAddress = net.ParseIP("127.0.0.1")
	s.Etcd.StorageConfig = *storagebackend.NewDefaultConfig("/registry", nil)
	s.Etcd.StorageConfig.Transport.ServerList = []string{"http://" + e.etcdURL}
	s.ServiceClusterIPRanges = "10.0.0.0/24"
	s.EndpointReconcilerType = "none"
	s.Authentication.ClientCert.ClientCA = filepath.Join(e.dir, "client-ca.crt")
	saKey := filepath.Join(e.dir, "sa.key")
	s.ServiceAccountSigningKeyFile = saKey
	s.Authentication.ServiceAccounts.Issuers = []string{"https://kubernetes.default.svc"}
	s.Authentication.ServiceAccounts.KeyFiles = []string{saKey}
	// There is no service-account token controller, so the admission plugin
	// that requires service-account tokens would reject every pod.
	s.Admission.GenericAdmission.DisablePlugins = []string{"ServiceAccount"}
	// On shutdown, drain ordinary requests and answer new ones with 429 and
	// Retry-After instead of waiting up to a minute for open watches: a
	// restart (RestartAPIServer) takes seconds even while clients watch.
	s.GenericServerRunOptions.ShutdownSendRetryAfter = true
	if e.opts.RBAC {
		s.Authorization.Modes = []string{"Node", "RBAC"}
	}
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("testenv: component globals: %w", err)
	}
	completed, err := s.Complete(ctx)
	if err != nil {
		return fmt.Errorf("testenv: complete apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) > 0 {
		return fmt.Errorf("testenv: invalid apiserver options: %w", errors.Join(errs...))
	}
	cfg, err := app.NewConfig(completed)
	if err != nil {
		return fmt.Errorf("testenv: apiserver config: %w", err)
	}
	cc, err := cfg.Complete()
	if err != nil {
		return fmt.Errorf("testenv: complete apiserver config: %w", err)
	}
	server, err := app.CreateServerChain(cc)
	if err != nil {
		return fmt.Errorf("testenv: create apiserver: %w", err)
	}
	prepared, err := server.PrepareRun()
	if err != nil {
		return fmt.Errorf("testenv: prepare apiserver: %w", err)
	}

	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- prepared.Run(runCtx) }()
	e.mu.Lock()
	e.cancel, e.done = cancel, done
	e.mu.Unlock()
	return e.waitReady(ctx, done)
}

func (e *Env) waitReady(ctx context.Context, done <-chan error) error {
	hc, err := rest.HTTPClientFor(e.admin)
	if err != nil {
		return fmt.Errorf("testenv: http client: %w", err)
	}
	defer hc.CloseIdleConnections()
	deadline := time.NewTimer(e.opts.StartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		select {
		case err := <-done:
			return fmt.Errorf("testenv: apiserver exited during start: %v", err)
		case <-deadline.C:
			return fmt.Errorf("testenv: apiserver not ready after %s (last /readyz answer: %s)", e.opts.StartTimeout, last)
		case <-ctx.Done():
			return fmt.Errorf("testenv: start apiserver: %w", context.Cause(ctx))
		case <-tick.C:
		}
		resp, err := hc.Get(e.admin.Host + "/readyz")
		if err != nil {
			last = err.Error()
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = fmt.Sprintf("%d %s", resp.StatusCode, body)
	}
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
	if e.stopped {
		e.mu.Unlock()
		return ErrStopped
	}
	cancel, done := e.cancel, e.done
	e.mu.Unlock()
	if cancel != nil {
		cancel()
		if err := <-done; err != nil {
			return fmt.Errorf("testenv: stop apiserver: %w", err)
		}
	}
	// The port was just released; take it again (another process may race
	// us for it, so try for a little while).
	var ln net.Listener
	err := retryFor(ctx, 10*time.Second, func() (err error) {
		ln, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(e.port))
		return err
	})
	if err != nil {
		return fmt.Errorf("testenv: listen again on port %d: %w", e.port, err)
	}
	return e.startAPIServer(ctx, ln)
}

func retryFor(ctx context.Context, d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop stops the API server and etcd and removes the temporary directory.
// It waits for the API server to finish shutting down. Calling it again does
// nothing.
func (e *Env) Stop() {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return
	}
	e.stopped = true
	cancel, done := e.cancel, e.done
	e.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	if e.etcd != nil {
		e.etcd.Close()
	}
	os.RemoveAll(e.dir)
}

// TB is the part of testing.TB that New uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
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
