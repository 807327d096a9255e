//go:build ignore

// Command apiserver is the test API server that package testenv runs as a
// child process: an embedded etcd and the real kube-apiserver
// (k8s.io/kubernetes/cmd/kube-apiserver/app) in one small program, on
// loopback ports.
//
// It is not built as part of the testenv module (hence the ignore build
// constraint): testenv embeds this file with go.mod.txt and go.sum.txt, writes
// them into a module of their own (the one place that needs the replace block
// for k8s.io/kubernetes's staging modules), builds it once into a cache and
// starts it. Neither testenv nor any module that imports it links
// k8s.io/kubernetes.
//
// Protocol with the parent (testenv):
//
//   - The parent creates --dir with serving.crt, serving.key, serving-ca.crt,
//     client-ca.crt, sa.key, admin.crt and admin.key (the admin identity is
//     used here only to poll /readyz).
//   - The program prints one JSON line on stdout, {"host": "https://..."},
//     each time the API server answers /readyz, or {"error": "..."} and exits
//     non-zero when it cannot start.
//   - It reads commands from stdin, one per line: "restart" stops the API
//     server and starts a new one on the same address with the same etcd;
//     "stop" shuts everything down and exits 0.
//   - End of stdin, SIGTERM or SIGINT mean the parent is gone or wants it
//     gone: it shuts down within a few seconds, removes --dir and exits. The
//     parent also sets the Linux parent-death signal, so a SIGKILLed test
//     process takes its API server with it.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// shutdownBound is how long a shutdown may take before the program exits
// anyway: no API server outlives its parent by more than this.
const shutdownBound = 10 * time.Second

type flags struct {
	dir          string
	port         int
	rbac         bool
	logs         bool
	startTimeout time.Duration
}

func main() {
	var f flags
	flag.StringVar(&f.dir, "dir", "", "directory with the certificates and keys; etcd's data goes below it (required)")
	flag.IntVar(&f.port, "port", 0, "port of the API server on 127.0.0.1 (0: pick a free one)")
	flag.BoolVar(&f.rbac, "rbac", false, "authorize with Node,RBAC instead of AlwaysAllow")
	flag.BoolVar(&f.logs, "logs", false, "write klog and etcd (error level) logs to stderr")
	flag.DurationVar(&f.startTimeout, "start-timeout", 2*time.Minute, "bound on each start of etcd and of the API server")
	flag.Parse()
	if err := run(f); err != nil {
		report(map[string]string{"error": err.Error()})
		os.Exit(1)
	}
}

var stdout = json.NewEncoder(os.Stdout)

func report(v map[string]string) { _ = stdout.Encode(v) }

func run(f flags) error {
	if f.dir == "" {
		return errors.New("--dir must not be empty")
	}
	quietKlog(f.logs)

	// stop closes on SIGTERM, SIGINT or the end of stdin (the parent is gone:
	// then the directory goes too). From then on the process exits within
	// shutdownBound whatever happens.
	stop := make(chan struct{})
	var once sync.Once
	var orphaned atomic.Bool
	shutdown := func() {
		once.Do(func() {
			time.AfterFunc(shutdownBound, func() {
				if orphaned.Load() {
					os.RemoveAll(f.dir)
				}
				os.Exit(1)
			})
			close(stop)
		})
	}
	cmds := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			select {
			case cmds <- sc.Text():
			case <-stop:
				return
			}
		}
		orphaned.Store(true)
		shutdown()
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		shutdown()
	}()

	s := &server{flags: f}
	defer func() {
		s.stopAPIServer()
		if s.etcd != nil {
			s.etcd.Close()
		}
		if orphaned.Load() {
			os.RemoveAll(f.dir)
		}
	}()
	if err := s.start(stop, s.startEtcd, s.startAPIServer); err != nil {
		return err
	}
	report(map[string]string{"host": s.host()})
	for {
		select {
		case <-stop:
			return nil
		case cmd := <-cmds:
			switch cmd {
			case "stop":
				shutdown()
				return nil
			case "restart":
				if err := s.stopAPIServer(); err != nil {
					return fmt.Errorf("stop apiserver: %w", err)
				}
				if err := s.start(stop, s.startAPIServer); err != nil {
					return err
				}
				report(map[string]string{"host": s.host()})
			default:
				report(map[string]string{"warning": fmt.Sprintf("unknown command %q", cmd)})
			}
		}
	}
}

// start runs steps in order under the start timeout, cut short by stop.
func (s *server) start(stop <-chan struct{}, steps ...func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.startTimeout)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

func quietKlog(logs bool) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	_ = fs.Set("one_output", "true")
	var w io.Writer = io.Discard
	if logs {
		w = os.Stderr
	}
	klog.SetOutput(w)
}

type server struct {
	flags
	etcd    *embed.Etcd
	etcdURL string
	cancel  context.CancelFunc // stops the running API server
	done    chan error         // receives the API server's exit
}

func (s *server) host() string { return "https://127.0.0.1:" + strconv.Itoa(s.port) }

func (s *server) startEtcd(ctx context.Context) error {
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(s.dir, "etcd")
	cfg.UnsafeNoFsync = true
	cfg.LogLevel = "error"
	if s.logs {
		core := zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(os.Stderr), zapcore.ErrorLevel)
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(core))
	} else {
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	}
	u := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{u}, []url.URL{u}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{u}, []url.URL{u}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	etcd, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	s.etcd = etcd
	select {
	case <-etcd.Server.ReadyNotify():
	case <-ctx.Done():
		return fmt.Errorf("etcd not ready after %s", s.startTimeout)
	}
	s.etcdURL = etcd.Clients[0].Addr().String()
	return nil
}

// listen listens on the configured port, or on a free one the first time.
// A port just released by a stopped server may be taken by another process
// for a moment, so it retries for a while.
func (s *server) listen(ctx context.Context) (net.Listener, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(s.port))
		if err == nil {
			s.port = ln.Addr().(*net.TCPAddr).Port
			return ln, nil
		}
		if s.port == 0 || time.Now().After(deadline) {
			return nil, fmt.Errorf("listen on 127.0.0.1:%d: %w", s.port, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("listen on 127.0.0.1:%d: %w", s.port, errors.Join(err, ctx.Err()))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startAPIServer builds and runs a kube-apiserver and waits for /readyz.
func (s *server) startAPIServer(ctx context.Context) error {
	ln, err := s.listen(ctx)
	if err != nil {
		return err
	}
	o := options.NewServerRunOptions()
	o.SecureServing.Listener = ln
	o.SecureServing.BindPort = s.port
	o.SecureServing.ServerCert.CertKey.CertFile = filepath.Join(s.dir, "serving.crt")
	o.SecureServing.ServerCert.CertKey.KeyFile = filepath.Join(s.dir, "serving.key")
	o.SecureServing.ExternalAddress = net.ParseIP("127.0.0.1")
	o.Etcd.StorageConfig = *storagebackend.NewDefaultConfig("/registry", nil)
	o.Etcd.StorageConfig.Transport.ServerList = []string{"http://" + s.etcdURL}
	// A /16: 65533 Services can have a cluster IP (a /24 held 253, fewer
	// than a demo or benchmark of hundreds of objects creates).
	o.ServiceClusterIPRanges = "10.0.0.0/16"
	o.EndpointReconcilerType = "none"
	o.Authentication.ClientCert.ClientCA = filepath.Join(s.dir, "client-ca.crt")
	saKey := filepath.Join(s.dir, "sa.key")
	o.ServiceAccountSigningKeyFile = saKey
	o.Authentication.ServiceAccounts.Issuers = []string{"https://kubernetes.default.svc"}
	o.Authentication.ServiceAccounts.KeyFiles = []string{saKey}
	// There is no service-account token controller, so the admission plugin
	// that requires service-account tokens would reject every pod.
	o.Admission.GenericAdmission.DisablePlugins = []string{"ServiceAccount"}
	// On shutdown, drain ordinary requests and answer new ones with 429 and
	// Retry-After instead of waiting up to a minute for open watches: a
	// restart takes seconds even while clients watch.
	o.GenericServerRunOptions.ShutdownSendRetryAfter = true
	if s.rbac {
		o.Authorization.Modes = []string{"Node", "RBAC"}
	}
	if err := o.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("component globals: %w", err)
	}
	completed, err := o.Complete(ctx)
	if err != nil {
		return fmt.Errorf("complete apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) > 0 {
		return fmt.Errorf("invalid apiserver options: %w", errors.Join(errs...))
	}
	cfg, err := app.NewConfig(completed)
	if err != nil {
		return fmt.Errorf("apiserver config: %w", err)
	}
	cc, err := cfg.Complete()
	if err != nil {
		return fmt.Errorf("complete apiserver config: %w", err)
	}
	chain, err := app.CreateServerChain(cc)
	if err != nil {
		return fmt.Errorf("create apiserver: %w", err)
	}
	prepared, err := chain.PrepareRun()
	if err != nil {
		return fmt.Errorf("prepare apiserver: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- prepared.Run(runCtx) }()
	s.cancel, s.done = cancel, done
	return s.waitReady(ctx)
}

func (s *server) stopAPIServer() error {
	if s.cancel == nil {
		return nil
	}
	s.cancel()
	err := <-s.done
	s.cancel, s.done = nil, nil
	return err
}

// waitReady polls /readyz as the admin identity until it answers 200.
func (s *server) waitReady(ctx context.Context) error {
	hc, err := s.adminClient()
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		select {
		case err := <-s.done:
			// Its exit taken: nothing is left for stopAPIServer to wait
			// for (it would wait for ever).
			s.cancel()
			s.cancel, s.done = nil, nil
			return fmt.Errorf("apiserver exited during start: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("apiserver not ready after %s (last /readyz answer: %s)", s.startTimeout, last)
		case <-tick.C:
		}
		resp, err := hc.Get(s.host() + "/readyz")
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

func (s *server) adminClient() (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(s.dir, "admin.crt"), filepath.Join(s.dir, "admin.key"))
	if err != nil {
		return nil, fmt.Errorf("load admin certificate: %w", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(s.dir, "serving-ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("serving-ca.crt holds no certificate")
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool},
	}}, nil
}
