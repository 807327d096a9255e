package operator

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/klog/v2"
)

// Defaults of Options, used by BindFlags for the fields left empty and by
// RESTConfig and NewLogger for zero values.
const (
	// DefaultMetricsBindAddress is where /metrics and the debug pages are
	// served: port 8080 on the loopback interface only, since the debug
	// pages name objects and errors. A Deployment that is scraped sets
	// --metrics-bind-address=:8080.
	DefaultMetricsBindAddress = "127.0.0.1:8080"
	// DefaultHealthProbeBindAddress is where /healthz and /readyz are
	// served for the kubelet's probes.
	DefaultHealthProbeBindAddress = ":8081"
	// DefaultKubeAPIQPS is the client-side rate limit, in requests per
	// second, that Options.RESTConfig applies (client-go's own default is
	// 5 QPS, too few for an operator's informers and writes).
	DefaultKubeAPIQPS = 50
	// DefaultKubeAPIBurst is the burst allowed above DefaultKubeAPIQPS.
	DefaultKubeAPIBurst = 100
	// DefaultLogLevel is the level of NewLogger's filter.
	DefaultLogLevel = "info"
	// DefaultLogFormat is the format of NewLogger's lines.
	DefaultLogFormat = "logfmt"
)

// Flag names of the Options fields, as BindFlags registers them.
const (
	flagKubeconfig              = "kubeconfig"
	flagMetricsBindAddress      = "metrics-bind-address"
	flagHealthProbeBindAddress  = "health-probe-bind-address"
	flagLeaderElect             = "leader-elect"
	flagLeaderElectionID        = "leader-election-id"
	flagLeaderElectionNamespace = "leader-election-namespace"
	flagLogLevel                = "log-level"
	flagLogFormat               = "log-format"
	flagKlogVerbosity           = "v"
	flagKubeAPIQPS              = "kube-api-qps"
	flagKubeAPIBurst            = "kube-api-burst"
	flagLeaseDuration           = "leader-election-lease-duration"
	flagRenewDeadline           = "leader-election-renew-deadline"
	flagRetryPeriod             = "leader-election-retry-period"
	flagShard                   = "shard"
	flagShardIdentity           = "shard-identity"
)

// serviceAccountNamespaceFile holds the namespace of the pod a process runs
// in; a variable so that tests can point it elsewhere.
var serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// homeKubeconfig is the kubeconfig RESTConfig falls back to
// (~/.kube/config); a variable so that tests can point it elsewhere.
var homeKubeconfig = clientcmd.RecommendedHomeFile

// Options are the command-line options of an operator binary, under the
// flag names that Kubernetes operators usually use (controller-runtime's
// and kubebuilder's). Bind them with BindFlags, parse the flags, call
// Validate, then build the logger with NewLogger, the cluster's config with
// RESTConfig and the Operator's Config with Config.
//
// An Options built in code rather than from flags may leave KubeAPIQPS,
// KubeAPIBurst, LogLevel and LogFormat empty: RESTConfig and NewLogger use
// the defaults then.
type Options struct {
	// Kubeconfig is the path of a kubeconfig file (--kubeconfig). Empty:
	// the files in $KUBECONFIG, else the in-cluster configuration of a pod,
	// else ~/.kube/config.
	Kubeconfig string
	// MetricsBindAddress is where /metrics, the debug pages, /healthz and
	// /readyz are served (--metrics-bind-address, host:port). "0" or empty
	// turns the endpoint off.
	MetricsBindAddress string
	// HealthProbeBindAddress is where /healthz and /readyz are served
	// (--health-probe-bind-address, host:port). "0" or empty: the probes
	// are served on MetricsBindAddress only (if that is on).
	HealthProbeBindAddress string
	// LeaderElect makes the operator reconcile only while it holds the
	// leader election Lease (--leader-elect, true by default when bound by
	// BindFlags), so that replicas never reconcile at the same time.
	LeaderElect bool
	// LeaderElectionID is the name of the Lease (--leader-election-id).
	// Validate requires it with LeaderElect.
	LeaderElectionID string
	// LeaderElectionNamespace is the namespace of the Lease
	// (--leader-election-namespace). Empty: the pod's namespace, else
	// "default"; see LeaderElectionNamespaceOrDefault.
	LeaderElectionNamespace string
	// LogLevel is the lowest level logged (--log-level): debug, info,
	// warn or error. Empty in NewLogger: DefaultLogLevel.
	LogLevel string
	// LogFormat is the format of the log lines (--log-format): logfmt or
	// json. Empty in NewLogger: DefaultLogFormat.
	LogFormat string
	// KubeAPIQPS is the client-side limit of requests per second to the
	// API server (--kube-api-qps). Zero in RESTConfig: DefaultKubeAPIQPS.
	KubeAPIQPS float64
	// KubeAPIBurst is the burst of requests allowed above KubeAPIQPS
	// (--kube-api-burst). Zero in RESTConfig: DefaultKubeAPIBurst.
	KubeAPIBurst int
	// LeaseDuration, RenewDeadline and RetryPeriod are the leader election
	// timings (--leader-election-lease-duration, -renew-deadline,
	// -retry-period). Zero: DefaultLeaseDuration, DefaultRenewDeadline,
	// DefaultRetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Shard makes every replica reconcile a share of the objects instead
	// of the leader all of them (--shard; see Sharding): Config sets
	// Config.Sharding, whose Resources the binary fills in (Command does,
	// from Command.ShardResources). The leader election Lease then elects
	// the replica that assigns the objects.
	Shard bool
	// ShardIdentity names this replica in the ring (--shard-identity), a
	// DNS label unique among the replicas. Empty: the host name (a pod's
	// name) with a random suffix. Validate wants Shard with it.
	ShardIdentity string
}

// BindFlags registers every option on fs, under the flag names given in
// the fields' docs, with a help text. The default of each flag is the
// value already set in o, or, where o leaves it empty (zero), the Default
// constant of the field: set o.LeaderElectionID (which has no default) and
// any other default of the binary's before calling BindFlags. Set
// MetricsBindAddress or HealthProbeBindAddress to "0" to default an
// endpoint to off. --leader-elect defaults to true whatever o.LeaderElect
// holds, since a false bool cannot be told from an unset one.
//
// BindFlags panics, as flag.FlagSet does, if fs already has a flag of one
// of these names.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	o.BindClientFlags(fs)
	fs.StringVar(&o.MetricsBindAddress, flagMetricsBindAddress, orDefault(o.MetricsBindAddress, DefaultMetricsBindAddress),
		`address serving /metrics, the debug pages, /healthz and /readyz (host:port; "0" turns it off)`)
	fs.StringVar(&o.HealthProbeBindAddress, flagHealthProbeBindAddress, orDefault(o.HealthProbeBindAddress, DefaultHealthProbeBindAddress),
		`address serving /healthz and /readyz for the kubelet's probes (host:port; "0": only on the metrics address)`)
	fs.BoolVar(&o.LeaderElect, flagLeaderElect, true,
		"reconcile only while holding the leader election Lease, so that replicas never reconcile at the same time")
	fs.StringVar(&o.LeaderElectionID, flagLeaderElectionID, o.LeaderElectionID,
		"name of the leader election Lease")
	fs.StringVar(&o.LeaderElectionNamespace, flagLeaderElectionNamespace, o.LeaderElectionNamespace,
		`namespace of the leader election Lease (default: the pod's namespace, else "default")`)
	fs.DurationVar(&o.LeaseDuration, flagLeaseDuration, orDefaultDuration(o.LeaseDuration, DefaultLeaseDuration),
		"how long the leader election Lease holds without renewal")
	fs.DurationVar(&o.RenewDeadline, flagRenewDeadline, orDefaultDuration(o.RenewDeadline, DefaultRenewDeadline),
		"how long the leader tries to renew the Lease before it stops leading")
	fs.DurationVar(&o.RetryPeriod, flagRetryPeriod, orDefaultDuration(o.RetryPeriod, DefaultRetryPeriod),
		"how often candidates try to acquire or renew the Lease")
	fs.BoolVar(&o.Shard, flagShard, o.Shard,
		"every replica reconciles a share of the objects; the leader election Lease elects the replica that assigns them")
	fs.StringVar(&o.ShardIdentity, flagShardIdentity, o.ShardIdentity,
		"name of this replica among the shards (default: the host name with a random suffix)")
}

// BindClientFlags registers the options of a one-off command that talks to
// the cluster and logs, such as an operator binary's "plan" subcommand:
// --kubeconfig, --kube-api-qps, --kube-api-burst, --log-level and
// --log-format, with the defaults BindFlags gives them (BindFlags calls
// it). The other fields keep their values, which Validate accepts when
// they are empty; RESTConfig and NewLogger then work as for an operator.
//
// It also registers -v, the verbosity of client-go's logs (klog's own -v
// flag, as Kubernetes components have it): V(n) lines up to n are logged,
// as debug lines when RedirectKlog sends them to a logger (so they show
// with --log-level=debug); 0, the default, logs none of them. -v sets
// klog's process-wide verbosity when it is parsed, not a field of o; its
// bad values are the flag's own parse errors. A program that registers
// klog's flags itself (klog.InitFlags) on the same FlagSet already has -v:
// BindClientFlags panics then, as for any flag registered twice.
func (o *Options) BindClientFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, flagKubeconfig, o.Kubeconfig,
		"path of a kubeconfig file (default: the files in $KUBECONFIG, else the in-cluster configuration, else ~/.kube/config)")
	fs.StringVar(&o.LogLevel, flagLogLevel, orDefault(o.LogLevel, DefaultLogLevel),
		"lowest level logged: debug, info, warn or error")
	fs.StringVar(&o.LogFormat, flagLogFormat, orDefault(o.LogFormat, DefaultLogFormat),
		"format of the log lines: logfmt or json")
	qps := o.KubeAPIQPS
	if qps == 0 {
		qps = DefaultKubeAPIQPS
	}
	fs.Float64Var(&o.KubeAPIQPS, flagKubeAPIQPS, qps,
		"requests per second to the API server (client-side rate limit)")
	burst := o.KubeAPIBurst
	if burst == 0 {
		burst = DefaultKubeAPIBurst
	}
	fs.IntVar(&o.KubeAPIBurst, flagKubeAPIBurst, burst,
		"burst of requests to the API server above --kube-api-qps (client-side rate limit)")
	fs.Var(klogVerbosity(), flagKlogVerbosity,
		"verbosity of client-go's logs: its V(n) lines up to n are logged at level debug (0: none)")
}

// klogVerbosity returns the flag.Value of klog's -v flag, which sets klog's
// process-wide verbosity; klog's other flags (log files, headers) are not
// exposed: RedirectKlog sends its lines to the operator's logger.
var klogVerbosity = sync.OnceValue(func() flag.Value {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	return fs.Lookup("v").Value
})

// ParseFlags parses args (without the program name) into fs the way a
// command's users expect: a bad flag is returned as the flag package's one
// line error ("invalid value ... for flag -x: ...", "flag provided but not
// defined: -y"), without the usage dump the flag package would print (fs's
// output is discarded); -h or --help writes usage and a newline, then fs's
// flags with their defaults and help, to stdout and returns flag.ErrHelp,
// which the command turns into exit code 0. fs should use
// flag.ContinueOnError.
func ParseFlags(fs *flag.FlagSet, args []string, usage string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
	}
	return err
}

func orDefaultDuration(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Validate checks the options as parsed from the flags, and returns nil or
// an error with one line per bad value (joined with errors.Join), each
// naming the flag and the value, such as
//
//	invalid value "yaml" for flag --log-format: want logfmt or json
//
// It checks that the addresses are "0", empty or host:port with a port
// number, that --kube-api-qps and --kube-api-burst are positive, that the
// log level and format are known (so an empty one is invalid here: BindFlags
// defaults them), and, with --leader-elect or --shard, that
// --leader-election-id is a valid Lease name (with --leader-elect also
// that it is set). A non-empty --leader-election-namespace must be a valid
// namespace name, and a non-empty --shard-identity a DNS label, given
// with --shard. The leader
// election timings must not be negative and, with --leader-elect or
// --shard, must fit together as Config's do: a lease duration of 1 s to
// math.MaxInt32 s, a renew deadline shorter than it, and a retry period
// shorter than the renew deadline / 1.2.
func (o Options) Validate() error {
	var errs []error
	for _, a := range []struct{ flag, value string }{
		{flagMetricsBindAddress, o.MetricsBindAddress},
		{flagHealthProbeBindAddress, o.HealthProbeBindAddress},
	} {
		if addressOff(a.value) {
			continue
		}
		if err := checkAddress(a.value); err != nil {
			errs = append(errs, fmt.Errorf("invalid value %q for flag --%s: %s", a.value, a.flag, err))
		}
	}
	if o.LeaderElect || o.Shard { // --shard elects its assigner with the Lease
		if o.LeaderElectionID == "" {
			if o.LeaderElect {
				errs = append(errs, fmt.Errorf("flag --%s must not be empty with --%s", flagLeaderElectionID, flagLeaderElect))
			}
		} else if msgs := validation.IsDNS1123Subdomain(o.LeaderElectionID); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("invalid value %q for flag --%s: %s", o.LeaderElectionID, flagLeaderElectionID, strings.Join(msgs, "; ")))
		}
	}
	if o.LeaderElectionNamespace != "" {
		if msgs := validation.IsDNS1123Label(o.LeaderElectionNamespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("invalid value %q for flag --%s: %s", o.LeaderElectionNamespace, flagLeaderElectionNamespace, strings.Join(msgs, "; ")))
		}
	}
	if _, err := levelOption(o.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("invalid value %q for flag --%s: %s", o.LogLevel, flagLogLevel, err))
	}
	if _, err := formatLogger(o.LogFormat, io.Discard); err != nil {
		errs = append(errs, fmt.Errorf("invalid value %q for flag --%s: %s", o.LogFormat, flagLogFormat, err))
	}
	if !(o.KubeAPIQPS > 0) { // also rejects NaN
		errs = append(errs, fmt.Errorf("invalid value %v for flag --%s: must be positive", o.KubeAPIQPS, flagKubeAPIQPS))
	}
	if o.KubeAPIBurst <= 0 {
		errs = append(errs, fmt.Errorf("invalid value %d for flag --%s: must be positive", o.KubeAPIBurst, flagKubeAPIBurst))
	}
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{{flagLeaseDuration, o.LeaseDuration}, {flagRenewDeadline, o.RenewDeadline}, {flagRetryPeriod, o.RetryPeriod}} {
		if d.value < 0 {
			errs = append(errs, fmt.Errorf("invalid value %s for flag --%s: must not be negative", d.value, d.flag))
		}
	}
	if o.ShardIdentity != "" {
		if msgs := validation.IsDNS1123Label(o.ShardIdentity); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("invalid value %q for flag --%s: %s", o.ShardIdentity, flagShardIdentity, strings.Join(msgs, "; ")))
		} else if !o.Shard {
			// Config would drop it: the replica would run unsharded,
			// electing a leader.
			errs = append(errs, fmt.Errorf("flag --%s needs --%s", flagShardIdentity, flagShard))
		}
	}
	lease, renew := orDefaultDuration(o.LeaseDuration, DefaultLeaseDuration), orDefaultDuration(o.RenewDeadline, DefaultRenewDeadline)
	if (o.LeaderElect || o.Shard) && lease > 0 && (lease < time.Second || lease > math.MaxInt32*time.Second) {
		errs = append(errs, fmt.Errorf("invalid value %s for flag --%s: must be 1s to %d s (a Lease holds whole seconds)", lease, flagLeaseDuration, math.MaxInt32))
	}
	switch whole := lease.Truncate(time.Second); {
	case !(o.LeaderElect || o.Shard):
	case renew >= lease:
		errs = append(errs, fmt.Errorf("flag --%s (%s) must be shorter than --%s (%s)", flagRenewDeadline, renew, flagLeaseDuration, lease))
	case renew >= whole && lease >= time.Second:
		errs = append(errs, fmt.Errorf("flag --%s (%s) must be shorter than --%s in whole seconds (%s of %s): %s", flagRenewDeadline, renew, flagLeaseDuration, whole, lease, leaseSecondsWhy))
	}
	if retry := orDefaultDuration(o.RetryPeriod, DefaultRetryPeriod); (o.LeaderElect || o.Shard) && !retryFitsRenew(retry, renew) {
		errs = append(errs, fmt.Errorf("flag --%s (%s) must be shorter than --%s (%s) / %.1f", flagRetryPeriod, retry, flagRenewDeadline, renew, leaderelection.JitterFactor))
	}
	return errors.Join(errs...)
}

// retryFitsRenew reports whether the retry period fits the renew deadline
// as client-go's leader election requires: renew > JitterFactor * retry.
func retryFitsRenew(retry, renew time.Duration) bool {
	return float64(renew) > leaderelection.JitterFactor*float64(retry)
}

// addressOff reports whether a bind address turns its endpoint off.
func addressOff(addr string) bool { return addr == "" || addr == "0" }

// checkAddress checks that addr is host:port with a port number, and
// returns the reason it is not, on one line.
func checkAddress(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		var addrErr *net.AddrError
		if errors.As(err, &addrErr) {
			return fmt.Errorf("want host:port (%s)", addrErr.Err)
		}
		return fmt.Errorf("want host:port (%s)", oneLine(err))
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return errors.New("want host:port with a port number from 0 to 65535")
	}
	return nil
}

// LeaderElectionNamespaceOrDefault returns the namespace of the leader
// election Lease: LeaderElectionNamespace if set, else the namespace of the
// pod this process runs in (read from its service account), else
// "default". New defaults Config.LeaderElectionNamespace the same way; this
// tells main the namespace beforehand, for a log line or a permission check.
func (o Options) LeaderElectionNamespaceOrDefault() string {
	if o.LeaderElectionNamespace != "" {
		return o.LeaderElectionNamespace
	}
	b, err := os.ReadFile(serviceAccountNamespaceFile)
	if ns := strings.TrimSpace(string(b)); err == nil && ns != "" {
		return ns
	}
	return "default"
}

// RESTConfig resolves the cluster to talk to, in this order: the kubeconfig
// file of Kubeconfig (--kubeconfig), else the files in $KUBECONFIG, else
// the in-cluster configuration of a pod, else ~/.kube/config. It returns
// the config, with QPS and Burst set from KubeAPIQPS and KubeAPIBurst (or
// DefaultKubeAPIQPS and DefaultKubeAPIBurst when zero), and a description
// of the source for a log line: the kubeconfig's absolute path, "from
// $KUBECONFIG (<value>)" or "in-cluster configuration".
//
// The error is one line that names the source that failed and why, such as
// "cannot load kubeconfig /etc/op/kubeconfig: stat ...: no such file or
// directory"; it wraps the underlying error for errors.Is and errors.As.
// RESTConfig makes no request: a config that loads may still point at an
// unreachable server.
func (o Options) RESTConfig() (*rest.Config, string, error) {
	cfg, source, err := loadRESTConfig(o.Kubeconfig)
	if err != nil {
		return nil, "", err
	}
	cfg.QPS = float32(o.KubeAPIQPS)
	if o.KubeAPIQPS == 0 {
		cfg.QPS = DefaultKubeAPIQPS
	}
	cfg.Burst = o.KubeAPIBurst
	if o.KubeAPIBurst == 0 {
		cfg.Burst = DefaultKubeAPIBurst
	}
	return cfg, source, nil
}

func loadRESTConfig(kubeconfig string) (*rest.Config, string, error) {
	load := func(path string) (*rest.Config, string, error) {
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
		if path == "" {
			rules = clientcmd.NewDefaultClientConfigLoadingRules()
		}
		source := describeKubeconfig(path)
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, "", &lineError{msg: "cannot load kubeconfig " + source, err: err}
		}
		return cfg, source, nil
	}
	switch {
	case kubeconfig != "":
		return load(kubeconfig)
	case os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "":
		return load("")
	}
	cfg, err := rest.InClusterConfig()
	if err == nil {
		return cfg, "in-cluster configuration", nil
	}
	if !errors.Is(err, rest.ErrNotInCluster) {
		return nil, "", &lineError{msg: "cannot use the in-cluster configuration", err: err}
	}
	if _, err := os.Stat(homeKubeconfig); err != nil {
		return nil, "", fmt.Errorf("no cluster configured: pass --%s, set $%s, or run in a pod (and %s does not exist)",
			flagKubeconfig, clientcmd.RecommendedConfigPathEnvVar, homeKubeconfig)
	}
	return load(homeKubeconfig)
}

// describeKubeconfig names a kubeconfig source: an absolute path, or
// $KUBECONFIG and its value for path "".
func describeKubeconfig(path string) string {
	if path == "" {
		return "from $" + clientcmd.RecommendedConfigPathEnvVar + " (" + os.Getenv(clientcmd.RecommendedConfigPathEnvVar) + ")"
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// NewLogger returns the logger that the options ask for: NewLogger with
// LogLevel and LogFormat (DefaultLogLevel and DefaultLogFormat when empty).
// The error names the flag and the bad value, as Validate's does.
func (o Options) NewLogger(w io.Writer) (log.Logger, error) {
	lvl, format := orDefault(o.LogLevel, DefaultLogLevel), orDefault(o.LogFormat, DefaultLogFormat)
	if _, err := levelOption(lvl); err != nil {
		return nil, fmt.Errorf("invalid value %q for flag --%s: %s", lvl, flagLogLevel, err)
	}
	if _, err := formatLogger(format, io.Discard); err != nil {
		return nil, fmt.Errorf("invalid value %q for flag --%s: %s", format, flagLogFormat, err)
	}
	return NewLogger(w, lvl, format)
}

// lineError is an error whose message is msg and err's message flattened
// to one line; it wraps err.
type lineError struct {
	msg string
	err error
}

func (e *lineError) Error() string { return e.msg + ": " + oneLine(e.err) }
func (e *lineError) Unwrap() error { return e.err }

// oneLine flattens an error message to one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
