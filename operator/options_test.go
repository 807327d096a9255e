package operator

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log/level"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func TestBindFlagsDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Options
		want Options
	}{{
		name: "zero options take the Default constants",
		in:   Options{},
		want: Options{
			MetricsBindAddress:     DefaultMetricsBindAddress,
			HealthProbeBindAddress: DefaultHealthProbeBindAddress,
			LeaderElect:            true,
			LogLevel:               DefaultLogLevel,
			LogFormat:              DefaultLogFormat,
			KubeAPIQPS:             DefaultKubeAPIQPS,
			KubeAPIBurst:           DefaultKubeAPIBurst,
			LeaseDuration:          DefaultLeaseDuration,
			RenewDeadline:          DefaultRenewDeadline,
			RetryPeriod:            DefaultRetryPeriod,
		},
	}, {
		name: "values set before BindFlags are the defaults",
		in: Options{
			Kubeconfig:              "/etc/kubeconfig",
			MetricsBindAddress:      "0",
			HealthProbeBindAddress:  "127.0.0.1:9000",
			LeaderElectionID:        "webapp-operator",
			LeaderElectionNamespace: "ops",
			LogLevel:                "debug",
			LogFormat:               "json",
			KubeAPIQPS:              20,
			KubeAPIBurst:            30,
			LeaseDuration:           4 * time.Second,
		},
		want: Options{
			Kubeconfig:              "/etc/kubeconfig",
			MetricsBindAddress:      "0",
			HealthProbeBindAddress:  "127.0.0.1:9000",
			LeaderElect:             true,
			LeaderElectionID:        "webapp-operator",
			LeaderElectionNamespace: "ops",
			LogLevel:                "debug",
			LogFormat:               "json",
			KubeAPIQPS:              20,
			KubeAPIBurst:            30,
			LeaseDuration:           4 * time.Second,
			RenewDeadline:           DefaultRenewDeadline,
			RetryPeriod:             DefaultRetryPeriod,
		},
	}, {
		name: "leader-elect defaults to true even when set false before",
		in:   Options{LeaderElect: false, LeaderElectionID: "x"},
		want: Options{
			MetricsBindAddress:     DefaultMetricsBindAddress,
			HealthProbeBindAddress: DefaultHealthProbeBindAddress,
			LeaderElect:            true,
			LeaderElectionID:       "x",
			LogLevel:               DefaultLogLevel,
			LogFormat:              DefaultLogFormat,
			KubeAPIQPS:             DefaultKubeAPIQPS,
			KubeAPIBurst:           DefaultKubeAPIBurst,
			LeaseDuration:          DefaultLeaseDuration,
			RenewDeadline:          DefaultRenewDeadline,
			RetryPeriod:            DefaultRetryPeriod,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.in
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			o.BindFlags(fs)
			if err := fs.Parse(nil); err != nil {
				t.Fatalf("Parse() error = %v", err)
			}
			if o != tt.want {
				t.Errorf("after BindFlags and Parse:\n got %+v\nwant %+v", o, tt.want)
			}
		})
	}
}

func TestBindFlagsParse(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.BindFlags(fs)
	args := []string{
		"--kubeconfig=/k", "--metrics-bind-address=:9090", "--health-probe-bind-address=0",
		"--leader-elect=false", "--leader-election-id=lease", "--leader-election-namespace=ns",
		"--log-level=warn", "--log-format=json", "--kube-api-qps=7.5", "--kube-api-burst=9",
		"--leader-election-lease-duration=6s", "--leader-election-renew-deadline=4s", "--leader-election-retry-period=1s",
		"--shard", "--shard-identity=pod-1",
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	want := Options{
		Kubeconfig: "/k", MetricsBindAddress: ":9090", HealthProbeBindAddress: "0",
		LeaderElect: false, LeaderElectionID: "lease", LeaderElectionNamespace: "ns",
		LogLevel: "warn", LogFormat: "json", KubeAPIQPS: 7.5, KubeAPIBurst: 9,
		LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: time.Second,
		Shard: true, ShardIdentity: "pod-1",
	}
	if o != want {
		t.Errorf("got %+v\nwant %+v", o, want)
	}
	// Every flag has a help text.
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == "" {
			t.Errorf("flag --%s has no help text", f.Name)
		}
	})
}

// validOptions returns options that pass Validate.
func validOptions() Options {
	return Options{
		MetricsBindAddress:     DefaultMetricsBindAddress,
		HealthProbeBindAddress: DefaultHealthProbeBindAddress,
		LeaderElect:            true,
		LeaderElectionID:       "webapp-operator",
		LogLevel:               "info",
		LogFormat:              "logfmt",
		KubeAPIQPS:             DefaultKubeAPIQPS,
		KubeAPIBurst:           DefaultKubeAPIBurst,
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Options)
		want   []string // one substring per expected line, in order
	}{
		{name: "valid", modify: func(*Options) {}},
		{name: "endpoints off with 0", modify: func(o *Options) { o.MetricsBindAddress, o.HealthProbeBindAddress = "0", "0" }},
		{name: "endpoints off when empty", modify: func(o *Options) { o.MetricsBindAddress, o.HealthProbeBindAddress = "", "" }},
		{name: "host and port 0", modify: func(o *Options) { o.MetricsBindAddress = "127.0.0.1:0"; o.HealthProbeBindAddress = "[::1]:8081" }},
		{name: "no leader election id needed without leader election", modify: func(o *Options) { o.LeaderElect, o.LeaderElectionID = false, "" }},
		{name: "all levels and formats", modify: func(o *Options) { o.LogLevel, o.LogFormat = "debug", "json" }},
		{
			name:   "metrics address without port",
			modify: func(o *Options) { o.MetricsBindAddress = "localhost" },
			want:   []string{`invalid value "localhost" for flag --metrics-bind-address: want host:port (missing port in address)`},
		},
		{
			name:   "probe address with a port name",
			modify: func(o *Options) { o.HealthProbeBindAddress = ":http" },
			want:   []string{`invalid value ":http" for flag --health-probe-bind-address: want host:port with a port number from 0 to 65535`},
		},
		{
			name:   "port out of range",
			modify: func(o *Options) { o.MetricsBindAddress = ":80800" },
			want:   []string{`invalid value ":80800" for flag --metrics-bind-address: want host:port with a port number`},
		},
		{
			name:   "renew deadline not shorter than the lease",
			modify: func(o *Options) { o.LeaseDuration, o.RenewDeadline = 5*time.Second, 5*time.Second },
			want:   []string{`flag --leader-election-renew-deadline (5s) must be shorter than --leader-election-lease-duration (5s)`},
		},
		{
			name: "renew deadline not shorter than the lease's whole seconds",
			modify: func(o *Options) {
				o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 2950*time.Millisecond, 2900*time.Millisecond, 100*time.Millisecond
			},
			want: []string{`flag --leader-election-renew-deadline (2.9s) must be shorter than --leader-election-lease-duration in whole seconds (2s of 2.95s)`},
		},
		{
			name: "lease shorter than a second",
			modify: func(o *Options) {
				o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 900*time.Millisecond, 600*time.Millisecond, 100*time.Millisecond
			},
			want: []string{`invalid value 900ms for flag --leader-election-lease-duration: must be 1s to 2147483647 s`},
		},
		{
			name:   "retry period not within the renew deadline",
			modify: func(o *Options) { o.RenewDeadline, o.RetryPeriod = 10*time.Second, 9*time.Second },
			want:   []string{`flag --leader-election-retry-period (9s) must be shorter than --leader-election-renew-deadline (10s) / 1.2`},
		},
		{
			name:   "negative retry period",
			modify: func(o *Options) { o.RetryPeriod = -time.Second },
			want:   []string{`invalid value -1s for flag --leader-election-retry-period: must not be negative`},
		},
		{
			name:   "shard identity not a DNS label",
			modify: func(o *Options) { o.Shard, o.ShardIdentity = true, "Pod_1" },
			want:   []string{`invalid value "Pod_1" for flag --shard-identity: a lowercase RFC 1123 label`},
		},
		{
			name:   "shard identity without shard",
			modify: func(o *Options) { o.ShardIdentity = "pod-1" },
			want:   []string{`flag --shard-identity needs --shard`},
		},
		{
			name: "lease timings checked when sharding",
			modify: func(o *Options) {
				o.LeaderElect, o.Shard, o.LeaseDuration, o.RenewDeadline = false, true, time.Second, 5*time.Second
			},
			want: []string{`flag --leader-election-renew-deadline (5s) must be shorter than --leader-election-lease-duration (1s)`},
		},
		{name: "lease timings unchecked without leader election", modify: func(o *Options) { o.LeaderElect, o.LeaseDuration, o.RenewDeadline = false, time.Second, 5*time.Second }},
		{
			name:   "unknown log format",
			modify: func(o *Options) { o.LogFormat = "yaml" },
			want:   []string{`invalid value "yaml" for flag --log-format: want logfmt or json`},
		},
		{
			name:   "empty log format",
			modify: func(o *Options) { o.LogFormat = "" },
			want:   []string{`invalid value "" for flag --log-format: want logfmt or json`},
		},
		{
			name:   "unknown log level",
			modify: func(o *Options) { o.LogLevel = "verbose" },
			want:   []string{`invalid value "verbose" for flag --log-level: want debug, info, warn or error`},
		},
		{
			name:   "zero qps",
			modify: func(o *Options) { o.KubeAPIQPS = 0 },
			want:   []string{`invalid value 0 for flag --kube-api-qps: must be positive`},
		},
		{
			name:   "negative burst",
			modify: func(o *Options) { o.KubeAPIBurst = -1 },
			want:   []string{`invalid value -1 for flag --kube-api-burst: must be positive`},
		},
		{
			name:   "leader election without id",
			modify: func(o *Options) { o.LeaderElectionID = "" },
			want:   []string{`flag --leader-election-id must not be empty with --leader-elect`},
		},
		{
			name:   "leader election id not a Lease name",
			modify: func(o *Options) { o.LeaderElectionID = "Web_App" },
			want:   []string{`invalid value "Web_App" for flag --leader-election-id: a lowercase RFC 1123 subdomain`},
		},
		{
			name:   "leader election id not a Lease name when sharding",
			modify: func(o *Options) { o.LeaderElect, o.Shard, o.LeaderElectionID = false, true, "Web_App" },
			want:   []string{`invalid value "Web_App" for flag --leader-election-id: a lowercase RFC 1123 subdomain`},
		},
		{name: "empty leader election id when sharding (Config defaults it)", modify: func(o *Options) { o.LeaderElect, o.Shard, o.LeaderElectionID = false, true, "" }},
		{
			name:   "leader election namespace not a namespace name",
			modify: func(o *Options) { o.LeaderElectionNamespace = "My_NS" },
			want:   []string{`invalid value "My_NS" for flag --leader-election-namespace: a lowercase RFC 1123 label`},
		},
		{
			name: "one line per bad value",
			modify: func(o *Options) {
				o.MetricsBindAddress = "x"
				o.LogLevel = "trace"
				o.LogFormat = "text"
				o.KubeAPIQPS = -2
				o.KubeAPIBurst = 0
			},
			want: []string{
				`invalid value "x" for flag --metrics-bind-address`,
				`invalid value "trace" for flag --log-level`,
				`invalid value "text" for flag --log-format`,
				`invalid value -2 for flag --kube-api-qps`,
				`invalid value 0 for flag --kube-api-burst`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := validOptions()
			tt.modify(&o)
			err := o.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() error = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tt.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("Validate() error has %d lines, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for i, want := range tt.want {
				if !strings.Contains(lines[i], want) {
					t.Errorf("Validate() line %d = %q, want it to contain %q", i, lines[i], want)
				}
			}
		})
	}
}

func TestValidateZeroOptions(t *testing.T) {
	// Options built in code without BindFlags: Validate is strict, the
	// constructors are lenient.
	if err := (Options{}).Validate(); err == nil {
		t.Errorf("Options{}.Validate() = nil, want errors for the empty level, format, qps and burst")
	}
	if _, err := (Options{}).NewLogger(io.Discard); err != nil {
		t.Errorf("Options{}.NewLogger() error = %v, want the defaults", err)
	}
}

func TestLeaderElectionNamespaceOrDefault(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name   string
		option string
		file   string
		want   string
	}{
		{name: "option wins", option: "ops", file: write("ns1", "pod-ns\n"), want: "ops"},
		{name: "pod namespace", file: write("ns2", "pod-ns\n"), want: "pod-ns"},
		{name: "not in a pod", file: filepath.Join(dir, "missing"), want: "default"},
		{name: "empty file", file: write("ns3", " \n"), want: "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := serviceAccountNamespaceFile
			serviceAccountNamespaceFile = tt.file
			t.Cleanup(func() { serviceAccountNamespaceFile = old })
			if got := (Options{LeaderElectionNamespace: tt.option}).LeaderElectionNamespaceOrDefault(); got != tt.want {
				t.Errorf("LeaderElectionNamespaceOrDefault() = %q, want %q", got, tt.want)
			}
		})
	}
}

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://%s.example.invalid:6443
contexts:
- name: ctx
  context:
    cluster: c
    user: u
current-context: ctx
users:
- name: u
  user:
    token: abc
`

func TestRESTConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	explicit := write("explicit", strings.ReplaceAll(testKubeconfig, "%s", "explicit"))
	env := write("env", strings.ReplaceAll(testKubeconfig, "%s", "env"))
	home := write("home", strings.ReplaceAll(testKubeconfig, "%s", "home"))
	broken := write("broken", "apiVersion: v1\nkind: Config\nclusters: [\n")
	noServer := write("noserver", "apiVersion: v1\nkind: Config\ncurrent-context: nowhere\n")
	missing := filepath.Join(dir, "missing")

	tests := []struct {
		name       string
		options    Options
		env        string // $KUBECONFIG
		inCluster  bool   // set KUBERNETES_SERVICE_HOST and _PORT
		home       string
		wantHost   string
		wantSource string
		wantQPS    float32
		wantBurst  int
		wantErr    string
		wantErrIs  error
	}{{
		name:       "explicit kubeconfig wins over $KUBECONFIG",
		options:    Options{Kubeconfig: explicit, KubeAPIQPS: 7, KubeAPIBurst: 11},
		env:        env,
		home:       home,
		wantHost:   "https://explicit.example.invalid:6443",
		wantSource: explicit,
		wantQPS:    7,
		wantBurst:  11,
	}, {
		name:       "$KUBECONFIG, default rate limits",
		env:        env,
		home:       home,
		wantHost:   "https://env.example.invalid:6443",
		wantSource: "from $KUBECONFIG (" + env + ")",
		wantQPS:    DefaultKubeAPIQPS,
		wantBurst:  DefaultKubeAPIBurst,
	}, {
		name:       "home kubeconfig when not in a pod",
		home:       home,
		wantHost:   "https://home.example.invalid:6443",
		wantSource: home,
		wantQPS:    DefaultKubeAPIQPS,
		wantBurst:  DefaultKubeAPIBurst,
	}, {
		name:    "nothing configured",
		home:    missing,
		wantErr: "no cluster configured: pass --kubeconfig, set $KUBECONFIG, or run in a pod (and " + missing + " does not exist)",
	}, {
		name:      "missing explicit kubeconfig",
		options:   Options{Kubeconfig: missing},
		home:      home,
		wantErr:   "cannot load kubeconfig " + missing + ": ",
		wantErrIs: fs.ErrNotExist,
	}, {
		name:    "broken kubeconfig",
		options: Options{Kubeconfig: broken},
		wantErr: "cannot load kubeconfig " + broken + ": ",
	}, {
		name:    "kubeconfig without a server",
		env:     noServer,
		wantErr: "cannot load kubeconfig from $KUBECONFIG (" + noServer + "): ",
	}, {
		name:      "in a pod without a service account token",
		inCluster: true,
		home:      home,
		wantErr:   "cannot use the in-cluster configuration: ",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(clientcmd.RecommendedConfigPathEnvVar, tt.env)
			if tt.inCluster {
				if _, err := os.Stat("/var/run/secrets/kubernetes.io/serviceaccount/token"); err == nil {
					t.Skip("runs in a pod: the in-cluster configuration would load")
				}
				t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
				t.Setenv("KUBERNETES_SERVICE_PORT", "443")
			} else {
				t.Setenv("KUBERNETES_SERVICE_HOST", "")
				t.Setenv("KUBERNETES_SERVICE_PORT", "")
			}
			old := homeKubeconfig
			homeKubeconfig = tt.home
			t.Cleanup(func() { homeKubeconfig = old })

			cfg, source, err := tt.options.RESTConfig()
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("RESTConfig() = %s from %s, want error %q", cfg.Host, source, tt.wantErr)
				}
				t.Logf("error: %v", err)
				if !strings.HasPrefix(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Errorf("RESTConfig() error = %q, want one line starting with %q", err, tt.wantErr)
				}
				if tt.wantErrIs != nil && !errors.Is(err, tt.wantErrIs) {
					t.Errorf("RESTConfig() error = %v, want it to match %v", err, tt.wantErrIs)
				}
				return
			}
			if err != nil {
				t.Fatalf("RESTConfig() error = %v", err)
			}
			if cfg.Host != tt.wantHost || source != tt.wantSource {
				t.Errorf("RESTConfig() = %s from %q, want %s from %q", cfg.Host, source, tt.wantHost, tt.wantSource)
			}
			if cfg.QPS != tt.wantQPS || cfg.Burst != tt.wantBurst {
				t.Errorf("RESTConfig() QPS, Burst = %v, %d, want %v, %d", cfg.QPS, cfg.Burst, tt.wantQPS, tt.wantBurst)
			}
		})
	}
}

func TestOptionsNewLogger(t *testing.T) {
	tests := []struct {
		name      string
		options   Options
		wantErr   string
		wantJSON  bool
		wantDebug bool
	}{
		{name: "defaults", options: Options{}},
		{name: "json at debug", options: Options{LogLevel: "debug", LogFormat: "json"}, wantJSON: true, wantDebug: true},
		{name: "bad level names the flag", options: Options{LogLevel: "loud"}, wantErr: `invalid value "loud" for flag --log-level: want debug, info, warn or error`},
		{name: "bad format names the flag", options: Options{LogFormat: "xml"}, wantErr: `invalid value "xml" for flag --log-format: want logfmt or json`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			logger, err := tt.options.NewLogger(&buf)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("NewLogger() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewLogger() error = %v", err)
			}
			_ = level.Debug(logger).Log("msg", "debug line")
			_ = logger.Log("msg", "plain line")
			out := buf.String()
			if got := strings.Contains(out, "debug line"); got != tt.wantDebug {
				t.Errorf("debug line logged = %v, want %v; output:\n%s", got, tt.wantDebug, out)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			last := lines[len(lines)-1]
			var m map[string]any
			isJSON := json.Unmarshal([]byte(last), &m) == nil
			if isJSON != tt.wantJSON {
				t.Errorf("line %q is JSON = %v, want %v", last, isJSON, tt.wantJSON)
			}
		})
	}
}

// TestKlogVerbosityFlag: -v, bound by BindFlags and BindClientFlags alike,
// sets klog's verbosity, so that client-go's V(n) lines up to n reach the
// logger RedirectKlog installs (as debug lines) and those above do not; a
// value that is not a number is the flag's parse error.
func TestKlogVerbosityFlag(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	o.BindFlags(fs)
	plan := flag.NewFlagSet("plan", flag.ContinueOnError)
	o.BindClientFlags(plan) // a second flag set shares klog's -v
	t.Cleanup(func() {
		if err := fs.Set(flagKlogVerbosity, "0"); err != nil {
			t.Error(err)
		}
	})
	if klog.V(1).Enabled() {
		t.Fatal("klog's V(1) is enabled before -v is given")
	}
	if err := ParseFlags(fs, []string{"-v=4"}, "", io.Discard); err != nil {
		t.Fatalf("ParseFlags(-v=4) error = %v", err)
	}
	var out bytes.Buffer
	o.LogLevel, o.LogFormat = "debug", "logfmt"
	logger, err := o.NewLogger(&out)
	if err != nil {
		t.Fatal(err)
	}
	restore := RedirectKlog(logger)
	klog.V(4).InfoS("four", "k", "v4")
	klog.V(5).InfoS("five")
	restore()
	if got := out.String(); !strings.Contains(got, "level=debug") || !strings.Contains(got, "msg=four") || strings.Contains(got, "msg=five") {
		t.Errorf("with -v=4 the log is %q, want the V(4) line as debug and not the V(5) one", got)
	}
	err = ParseFlags(plan, []string{"-v=loud"}, "", io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-v") {
		t.Errorf("ParseFlags(-v=loud) error = %v, want the flag's parse error naming -v", err)
	}
}
