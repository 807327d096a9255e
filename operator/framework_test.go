package operator

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"

	"github.com/operatorkit/operatorkit/framework"
)

func TestFrameworkOptions(t *testing.T) {
	var o FrameworkOptions
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	want := FrameworkOptions{Workers: framework.DefaultWorkers, ResyncPeriod: DefaultResyncPeriod, ReconcileTimeout: framework.DefaultReconcileTimeout}
	if o != want {
		t.Fatalf("defaults = %+v, want %+v", o, want)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("Validate(defaults) = %v", err)
	}

	o = FrameworkOptions{Workers: 3, Namespace: "apps"}
	fs = flag.NewFlagSet("test", flag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--dry-run", "--resync-period", "1m"}); err != nil {
		t.Fatal(err)
	}
	want = FrameworkOptions{Namespace: "apps", Workers: 3, ResyncPeriod: time.Minute, ReconcileTimeout: framework.DefaultReconcileTimeout, DryRun: true}
	if o != want {
		t.Fatalf("parsed = %+v, want %+v", o, want)
	}

	err := FrameworkOptions{Workers: 0, ResyncPeriod: -time.Second}.Validate()
	for _, w := range []string{
		"invalid value 0 for flag --workers: must be at least 1",
		"invalid value -1s for flag --resync-period: must be at least 1s",
		"invalid value 0s for flag --reconcile-timeout: must be positive",
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Validate() = %v, want it to say %q", err, w)
		}
	}
	err = FrameworkOptions{Workers: 1, ResyncPeriod: 30, ReconcileTimeout: time.Minute}.Validate()
	if w := "invalid value 30ns for flag --resync-period: must be at least 1s"; err == nil || !strings.Contains(err.Error(), w) {
		t.Errorf("Validate() = %v, want it to say %q", err, w)
	}
	err = FrameworkOptions{Workers: framework.MaxWorkers + 1, ResyncPeriod: time.Minute, ReconcileTimeout: time.Minute}.Validate()
	if w := "invalid value 10001 for flag --workers: must be at most 10000"; err == nil || !strings.Contains(err.Error(), w) {
		t.Errorf("Validate() = %v, want it to say %q", err, w)
	}
	err = FrameworkOptions{Namespace: "Apps", Workers: 1, ResyncPeriod: time.Minute, ReconcileTimeout: time.Minute}.Validate()
	if w := `invalid value "Apps" for flag --namespace: `; err == nil || !strings.Contains(err.Error(), w) {
		t.Errorf("Validate() = %v, want it to say %q", err, w)
	}
}

func TestBindClientFlags(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.BindClientFlags(fs)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if got := strings.Join(names, " "); got != "kube-api-burst kube-api-qps kubeconfig log-format log-level v" {
		t.Fatalf("flags = %s", got)
	}
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("Validate() of the client options = %v, want nil", err)
	}
}

func TestParseFlags(t *testing.T) {
	fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
	n := fs.Int("n", 1, "a number")
	var stdout bytes.Buffer
	if err := ParseFlags(fs, []string{"-n", "x"}, "usage: cmd", &stdout); err == nil || !strings.Contains(err.Error(), `invalid value "x" for flag -n`) || stdout.Len() != 0 {
		t.Fatalf("ParseFlags(bad) = %v, stdout %q", err, stdout.String())
	}
	fs = flag.NewFlagSet("cmd", flag.ContinueOnError)
	n = fs.Int("n", 1, "a number")
	if err := ParseFlags(fs, []string{"--help"}, "usage: cmd", &stdout); !errors.Is(err, flag.ErrHelp) ||
		!strings.HasPrefix(stdout.String(), "usage: cmd\n") || !strings.Contains(stdout.String(), "a number") {
		t.Fatalf("ParseFlags(--help) = %v, stdout %q", err, stdout.String())
	}
	if err := ParseFlags(fs, []string{"-n", "2"}, "usage: cmd", &stdout); err != nil || *n != 2 {
		t.Fatalf("ParseFlags(-n 2) = %v, n = %d", err, *n)
	}
}

// TestNewFrameworkMetadataClient checks that NewFramework gives a Framework
// that writes finalizers the Operator's metadata client, keeps the user's,
// and gives none where no finalizer is written.
func TestNewFrameworkMetadataClient(t *testing.T) {
	o, err := New(Config{RESTConfig: restConfig(), Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Metadata() == nil {
		t.Fatal("Metadata() = nil")
	}
	config := thingsConfig(t, o)
	got, err := o.frameworkConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	if got.MetadataClient != o.Metadata() || got.Client != o.Dynamic() {
		t.Errorf("MetadataClient, Client = %v, %v; want the Operator's %v, %v", got.MetadataClient, got.Client, o.Metadata(), o.Dynamic())
	}

	mine, err := metadata.NewForConfig(restConfig())
	if err != nil {
		t.Fatal(err)
	}
	withMine := config
	withMine.MetadataClient = mine
	if got, err := o.frameworkConfig(withMine); err != nil || got.MetadataClient != mine {
		t.Errorf("MetadataClient given = %v (err %v), want the user's %v kept", got.MetadataClient, err, mine)
	}

	for name, set := range map[string]func(*framework.Config){
		"DryRun":            func(c *framework.Config) { c.DryRun = true },
		"DisableFinalizers": func(c *framework.Config) { c.DisableFinalizers = true },
	} {
		c := config
		set(&c)
		if got, err := o.frameworkConfig(c); err != nil || got.MetadataClient != nil {
			t.Errorf("with %s: MetadataClient = %v (err %v), want nil: no finalizer is written", name, got.MetadataClient, err)
		}
	}

	f, err := o.NewFramework(config)
	if err != nil {
		t.Fatalf("NewFramework() = %v", err)
	}
	if len(o.frameworks) != 1 || o.frameworks[0] != f {
		t.Fatal("NewFramework did not add the Framework")
	}
}

// TestNewFrameworkLogger: a Framework gets the Operator's logger when the
// Operator has one, and none when it has none (so that it builds no log
// line for a logger that drops them all); a logger given is kept.
// TestNewFrameworkNilPointerLogger: a framework.Config.Logger holding a
// nil pointer is refused naming it, also with a CRD (whose client
// NewFramework would make with that Logger).
func TestNewFrameworkNilPointerLogger(t *testing.T) {
	o, err := New(Config{RESTConfig: restConfig(), Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	config := thingsConfig(t, o)
	config.Logger = (*recorder)(nil)
	config.CRD = &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "things.example.com"}}
	if _, err := o.NewFramework(config); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "framework.Config.Logger is a nil *operator.recorder") {
		t.Fatalf("NewFramework() = %v, want ErrInvalidConfig naming framework.Config.Logger", err)
	}
}

func TestNewFrameworkLogger(t *testing.T) {
	mine := log.NewLogfmtLogger(io.Discard)
	for _, tc := range []struct {
		name      string
		operator  log.Logger
		given     log.Logger
		wantNil   bool
		wantGiven bool
	}{
		{name: "operator without a logger", wantNil: true},
		{name: "operator with a logger", operator: mine},
		{name: "logger given", given: mine, wantGiven: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := New(Config{RESTConfig: restConfig(), Name: "x", Logger: tc.operator})
			if err != nil {
				t.Fatal(err)
			}
			config := thingsConfig(t, o)
			config.Logger = tc.given
			got, err := o.frameworkConfig(config)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.wantNil && got.Logger != nil:
				t.Errorf("Logger = %v, want nil", got.Logger)
			case tc.wantGiven && got.Logger != tc.given:
				t.Errorf("Logger = %v, want the one given", got.Logger)
			case !tc.wantNil && !tc.wantGiven && got.Logger != o.logger:
				t.Errorf("Logger = %v, want the Operator's %v", got.Logger, o.logger)
			}
		})
	}
}
