package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/go-logfmt/logfmt"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// line returns the line it is called on.
func line() int {
	_, _, l, _ := runtime.Caller(1)
	return l
}

// record is a parsed log line.
type record struct {
	keys   []string // in order, duplicates kept (logfmt only)
	values map[string]string
}

// parseLines parses the log lines in out, written in format.
func parseLines(t *testing.T, format, out string) []record {
	t.Helper()
	var recs []record
	switch format {
	case "json":
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("line %q is not JSON: %v", l, err)
			}
			r := record{values: map[string]string{}}
			for k, v := range m {
				r.keys = append(r.keys, k)
				r.values[k] = fmt.Sprint(v)
			}
			recs = append(recs, r)
		}
	case "logfmt":
		d := logfmt.NewDecoder(strings.NewReader(out))
		for d.ScanRecord() {
			r := record{values: map[string]string{}}
			for d.ScanKeyval() {
				r.keys = append(r.keys, string(d.Key()))
				r.values[string(d.Key())] = string(d.Value())
			}
			recs = append(recs, r)
		}
		if err := d.Err(); err != nil {
			t.Fatalf("output is not logfmt: %v\n%s", err, out)
		}
	default:
		t.Fatalf("unknown format %q", format)
	}
	return recs
}

func TestNewLogger(t *testing.T) {
	// A local time zone other than UTC, to see that "ts" is in UTC.
	local := time.Local
	time.Local = time.FixedZone("UTC+1", 3600)
	t.Cleanup(func() { time.Local = local })
	tests := []struct {
		lvl        string
		wantLevels []string
	}{
		{lvl: "debug", wantLevels: []string{"debug", "info", "warn", "error"}},
		{lvl: "info", wantLevels: []string{"info", "warn", "error"}},
		{lvl: "warn", wantLevels: []string{"warn", "error"}},
		{lvl: "error", wantLevels: []string{"error"}},
	}
	for _, format := range []string{"logfmt", "json"} {
		for _, tt := range tests {
			t.Run(format+"/"+tt.lvl, func(t *testing.T) {
				var buf bytes.Buffer
				logger, err := NewLogger(&buf, tt.lvl, format)
				if err != nil {
					t.Fatalf("NewLogger() error = %v", err)
				}
				start := time.Now().UTC().Add(-time.Second)
				lines := map[string]int{}
				_ = level.Debug(logger).Log("msg", "at debug", "key", "value")
				lines["debug"] = line() - 1
				_ = level.Info(logger).Log("msg", "at info", "key", "value")
				lines["info"] = line() - 1
				_ = level.Warn(logger).Log("msg", "at warn", "key", "value")
				lines["warn"] = line() - 1
				_ = level.Error(logger).Log("msg", "at error", "key", "value")
				lines["error"] = line() - 1

				recs := parseLines(t, format, buf.String())
				if len(recs) != len(tt.wantLevels) {
					t.Fatalf("got %d lines, want %d:\n%s", len(recs), len(tt.wantLevels), buf.String())
				}
				for i, r := range recs {
					lvl := tt.wantLevels[i]
					want := map[string]string{
						"level":  lvl,
						"caller": "log_test.go:" + strconv.Itoa(lines[lvl]),
						"msg":    "at " + lvl,
						"key":    "value",
					}
					ts, err := time.Parse(time.RFC3339Nano, r.values["ts"])
					if err != nil || !strings.HasSuffix(r.values["ts"], "Z") || ts.Before(start) {
						t.Errorf("ts = %q, want a recent RFC 3339 time in UTC", r.values["ts"])
					}
					delete(r.values, "ts")
					if !reflect.DeepEqual(r.values, want) {
						t.Errorf("line %d = %v, want %v", i, r.values, want)
					}
					if len(r.keys) != len(want)+1 {
						t.Errorf("line %d has keys %v, want each once", i, r.keys)
					}
				}
			})
		}
	}
}

// TestNewLoggerThroughContexts: a line logged through log.With contexts
// (the Operator's and a Framework's) names its own call site, with ts and
// the context's keys; a line the level filter drops costs neither a
// timestamp nor a stack walk (a Framework logs one debug line per
// reconciliation).
func TestNewLoggerThroughContexts(t *testing.T) {
	var buf bytes.Buffer
	logger, err := NewLogger(&buf, "info", "logfmt")
	if err != nil {
		t.Fatal(err)
	}
	derived := log.With(log.With(logger, "operator", "op"), "controller", "c")
	_ = level.Info(derived).Log("msg", "through contexts")
	want := "log_test.go:" + strconv.Itoa(line()-1)
	recs := parseLines(t, "logfmt", buf.String())
	if len(recs) != 1 {
		t.Fatalf("got %d lines, want 1:\n%s", len(recs), buf.String())
	}
	r := recs[0]
	if r.values["caller"] != want || r.values["operator"] != "op" || r.values["controller"] != "c" || r.values["level"] != "info" || r.values["ts"] == "" {
		t.Errorf("line = %v, want caller %s, operator op, controller c, level info and a ts", r.values, want)
	}
	if got := strings.Join(r.keys[:3], ","); got != "level,ts,caller" {
		t.Errorf("keys start with %s, want level,ts,caller", got)
	}

	debug := level.Debug(derived)
	key := "ns/name"
	allocs := testing.AllocsPerRun(200, func() { _ = debug.Log("object", key, "msg", "reconciled") })
	if allocs > 3 {
		t.Errorf("a dropped debug line allocates %.0f times, want at most 3 (the timestamp or the call site is computed before the filter)", allocs)
	}
	if buf.Len() != 0 && strings.Count(buf.String(), "\n") != 1 {
		t.Errorf("debug lines were written at level info:\n%s", buf.String())
	}
}

func TestNewLoggerInvalid(t *testing.T) {
	tests := []struct {
		name, lvl, format, wantErr string
	}{
		{name: "unknown level", lvl: "trace", format: "logfmt", wantErr: `invalid log level "trace": want debug, info, warn or error`},
		{name: "empty level", lvl: "", format: "logfmt", wantErr: `invalid log level "": want debug, info, warn or error`},
		{name: "level in capitals", lvl: "INFO", format: "json", wantErr: `invalid log level "INFO": want debug, info, warn or error`},
		{name: "unknown format", lvl: "info", format: "text", wantErr: `invalid log format "text": want logfmt or json`},
		{name: "empty format", lvl: "info", format: "", wantErr: `invalid log format "": want logfmt or json`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, err := NewLogger(&bytes.Buffer{}, tt.lvl, tt.format)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("NewLogger() = %v, %v, want error %q", logger, err, tt.wantErr)
			}
		})
	}
}

// recorder is a go-kit logger keeping the keyvals of each call.
type recorder struct{ calls [][]any }

func (r *recorder) Log(keyvals ...any) error {
	r.calls = append(r.calls, keyvals)
	return nil
}

func TestLastCaller(t *testing.T) {
	tests := []struct {
		name string
		in   []any
		want []any
	}{
		{name: "no caller", in: []any{"msg", "m"}, want: []any{"msg", "m"}},
		{name: "one caller", in: []any{"caller", "a.go:1", "msg", "m"}, want: []any{"caller", "a.go:1", "msg", "m"}},
		{name: "caller as a value is no key", in: []any{"caller", "a.go:1", "x", "caller"}, want: []any{"caller", "a.go:1", "x", "caller"}},
		{name: "last value at the first place", in: []any{"level", "info", "caller", "a.go:1", "msg", "m", "caller", "b.go:2", "k", "v"}, want: []any{"level", "info", "caller", "b.go:2", "msg", "m", "k", "v"}},
		{name: "three callers", in: []any{"caller", "a", "x", 1, "caller", "b", "caller", "c"}, want: []any{"caller", "c", "x", 1}},
		{name: "non-string keys", in: []any{1, "x", "caller", "a", errors.New("k"), "y", "caller", "b"}, want: []any{1, "x", "caller", "b", errors.New("k"), "y"}},
		{name: "dangling key", in: []any{"caller", "a", "caller", "b", "dangling"}, want: []any{"caller", "b", "dangling"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]any(nil), tt.in...)
			var rec recorder
			_ = lastCaller{next: &rec}.Log(in...)
			if len(rec.calls) != 1 || !reflect.DeepEqual(rec.calls[0], tt.want) {
				t.Errorf("Log(%v) passed %v, want %v", tt.in, rec.calls, tt.want)
			}
			if !reflect.DeepEqual(in, tt.in) {
				t.Errorf("Log modified its argument: %v, was %v", in, tt.in)
			}
		})
	}
}

// setKlogVerbosity sets klog's -v flag for the test.
func setKlogVerbosity(t *testing.T, v int) {
	t.Helper()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	old := fs.Lookup("v").Value.String()
	if err := fs.Set("v", strconv.Itoa(v)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fs.Set("v", old) })
}

// logViaHelper logs through klog on behalf of its caller.
func logViaHelper(msg string) { klog.InfoSDepth(1, msg, "via", "helper") }

func TestRedirectKlog(t *testing.T) {
	tests := []struct {
		name  string
		level string // of the go-kit filter
		v     int    // klog's verbosity
		// log logs through klog and returns the line of the call that
		// the "caller" key should name.
		log  func() int
		want map[string]string // nil: no line; the "caller" key is checked apart
	}{{
		name:  "InfoS at V(0) is info",
		level: "info",
		log: func() int {
			klog.InfoS("pod started", "pod", klog.KRef("ns", "a"), "count", 3)
			return line() - 1
		},
		want: map[string]string{"level": "info", "msg": "pod started", "pod": "ns/a", "count": "3"},
	}, {
		name:  "V(2).InfoS is debug with v",
		level: "debug",
		v:     2,
		log: func() int {
			klog.V(2).InfoS("watch event", "type", "ADDED")
			return line() - 1
		},
		want: map[string]string{"level": "debug", "v": "2", "msg": "watch event", "type": "ADDED"},
	}, {
		name:  "V(2) dropped by the info level filter",
		level: "info",
		v:     2,
		log: func() int {
			klog.V(2).InfoS("watch event", "type", "ADDED")
			return line() - 1
		},
	}, {
		name:  "V(2) not logged at klog verbosity 1",
		level: "debug",
		v:     1,
		log: func() int {
			klog.V(2).InfoS("watch event", "type", "ADDED")
			return line() - 1
		},
	}, {
		name:  "V(1).Infof is debug",
		level: "debug",
		v:     1,
		log: func() int {
			klog.V(1).Infof("synced %d objects", 5)
			return line() - 1
		},
		want: map[string]string{"level": "debug", "v": "1", "msg": "synced 5 objects"},
	}, {
		name:  "ErrorS is error with err",
		level: "error",
		log: func() int {
			klog.ErrorS(errors.New("connection refused"), "list failed", "resource", "pods")
			return line() - 1
		},
		want: map[string]string{"level": "error", "msg": "list failed", "err": "connection refused", "resource": "pods"},
	}, {
		name:  "ErrorS without an error has no err",
		level: "info",
		log: func() int {
			klog.ErrorS(nil, "unexpected object")
			return line() - 1
		},
		want: map[string]string{"level": "error", "msg": "unexpected object"},
	}, {
		name:  "Infof is info with the formatted message",
		level: "info",
		log: func() int {
			klog.Infof("starting %s controller with %d workers", "webapp", 2)
			return line() - 1
		},
		want: map[string]string{"level": "info", "msg": "starting webapp controller with 2 workers"},
	}, {
		name:  "Infof dropped by the warn level filter",
		level: "warn",
		log: func() int {
			klog.Infof("starting %s", "x")
			return line() - 1
		},
	}, {
		name:  "Errorf is error",
		level: "info",
		log: func() int {
			klog.Errorf("watch of %s ended: %v", "pods", "timeout")
			return line() - 1
		},
		want: map[string]string{"level": "error", "msg": "watch of pods ended: timeout"},
	}, {
		name:  "Warning is info",
		level: "info",
		log: func() int {
			klog.Warning("deprecated API")
			return line() - 1
		},
		want: map[string]string{"level": "info", "msg": "deprecated API"},
	}, {
		name:  "InfoSDepth names its caller's caller",
		level: "info",
		log: func() int {
			logViaHelper("from helper")
			return line() - 1
		},
		want: map[string]string{"level": "info", "msg": "from helper", "via": "helper"},
	}, {
		name:  "contextual logger with names and values",
		level: "info",
		log: func() int {
			logger := klog.Background().WithName("leaderelection").WithValues("lease", "ns/op").WithName("elector")
			logger.Info("acquired lease", "identity", "pod-1")
			return line() - 1
		},
		want: map[string]string{"level": "info", "logger": "leaderelection/elector", "msg": "acquired lease", "lease": "ns/op", "identity": "pod-1"},
	}, {
		name:  "contextual V(1) from context is debug",
		level: "debug",
		v:     1,
		log: func() int {
			klog.FromContext(context.Background()).V(1).Info("resync", "n", 4)
			return line() - 1
		},
		want: map[string]string{"level": "debug", "v": "1", "msg": "resync", "n": "4"},
	}, {
		name:  "contextual V(1) not logged at klog verbosity 0",
		level: "debug",
		log: func() int {
			klog.FromContext(context.Background()).V(1).Info("resync")
			return line() - 1
		},
	}, {
		name:  "contextual Error is error",
		level: "info",
		log: func() int {
			klog.Background().WithName("reflector").Error(errors.New("gone"), "watch failed")
			return line() - 1
		},
		want: map[string]string{"level": "error", "logger": "reflector", "msg": "watch failed", "err": "gone"},
	}}
	for _, format := range []string{"logfmt", "json"} {
		for _, tt := range tests {
			t.Run(format+"/"+tt.name, func(t *testing.T) {
				setKlogVerbosity(t, tt.v)
				var buf bytes.Buffer
				logger, err := NewLogger(&buf, tt.level, format)
				if err != nil {
					t.Fatal(err)
				}
				restore := RedirectKlog(logger)
				defer restore()
				callLine := tt.log()
				recs := parseLines(t, format, buf.String())
				if tt.want == nil {
					if len(recs) != 0 {
						t.Fatalf("got %d lines, want none:\n%s", len(recs), buf.String())
					}
					return
				}
				if len(recs) != 1 {
					t.Fatalf("got %d lines, want 1:\n%s", len(recs), buf.String())
				}
				r := recs[0]
				if want := "log_test.go:" + strconv.Itoa(callLine); r.values["caller"] != want {
					t.Errorf("caller = %q, want %q", r.values["caller"], want)
				}
				if _, err := time.Parse(time.RFC3339Nano, r.values["ts"]); err != nil {
					t.Errorf("ts = %q, want an RFC 3339 time", r.values["ts"])
				}
				delete(r.values, "caller")
				delete(r.values, "ts")
				if !reflect.DeepEqual(r.values, tt.want) {
					t.Errorf("line = %v, want %v", r.values, tt.want)
				}
				if len(r.keys) != len(tt.want)+2 {
					t.Errorf("line has keys %v, want each once", r.keys)
				}
			})
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// setKlogText sends the klog lines that no RedirectKlog takes, which go to
// stderr in klog's text format, to w for the test.
func setKlogText(t *testing.T, w io.Writer) {
	t.Helper()
	installKlogSink()
	klogRedirect.mu.Lock()
	old := klogRedirect.text
	klogRedirect.text = textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(w))).GetSink()
	klogRedirect.mu.Unlock()
	t.Cleanup(func() {
		klogRedirect.mu.Lock()
		klogRedirect.text = old
		klogRedirect.mu.Unlock()
	})
}

// TestRedirectKlogRestore: restore removes the redirection, after which
// klog's lines, by its functions and by its contextual logger, are written
// in klog's text format with their call site; a restore of a redirection a
// later RedirectKlog replaced leaves the later one.
func TestRedirectKlogRestore(t *testing.T) {
	var native syncBuffer
	setKlogText(t, &native)
	var buf, later bytes.Buffer
	restore := RedirectKlog(log.NewLogfmtLogger(&buf))
	klog.InfoS("redirected")
	restore()
	klog.InfoS("not redirected")
	notRedirected := line() - 1
	klog.Background().WithName("elector").WithValues("lease", "ns/op").Error(errors.New("gone"), "contextual")
	contextual := line() - 1
	if out := buf.String(); !strings.Contains(out, "msg=redirected") || strings.Contains(out, "not redirected") || strings.Contains(out, "contextual") {
		t.Errorf("go-kit output = %q, want only the line logged before restore", out)
	}
	out := native.String()
	for _, want := range []string{
		`^I\d{4} [0-9:.]+ +\d+ log_test.go:` + strconv.Itoa(notRedirected) + `\] "not redirected"$`,
		`^E\d{4} [0-9:.]+ +\d+ log_test.go:` + strconv.Itoa(contextual) + `\] "contextual" err="gone" logger="elector" lease="ns/op"$`,
	} {
		if !regexp.MustCompile("(?m)" + want).MatchString(out) {
			t.Errorf("klog text output = %q, want a line matching %s", out, want)
		}
	}
	if strings.Contains(out, `"redirected"`) {
		t.Errorf("klog text output = %q, want no line logged before restore", out)
	}

	first := RedirectKlog(log.NewLogfmtLogger(&buf))
	second := RedirectKlog(log.NewLogfmtLogger(&later))
	first() // replaced by second: no effect
	klog.InfoS("to the later logger")
	second()
	if !strings.Contains(later.String(), "msg=\"to the later logger\"") {
		t.Errorf("later logger's output = %q, want the line logged after the restore of the earlier redirection", later.String())
	}
}

// TestRedirectKlogConcurrent: RedirectKlog and restore may run while other
// goroutines log through klog (as client-go's watches that outlive a plan
// do while the next Command redirects klog), and once restore returns no
// line reaches its logger.
func TestRedirectKlogConcurrent(t *testing.T) {
	setKlogText(t, io.Discard)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if i%2 == 0 {
					klog.InfoS("watch event", "goroutine", i)
				} else {
					klog.Background().WithName("reflector").Info("watch event", "goroutine", i)
				}
			}
		}()
	}
	defer wg.Wait()
	defer cancel()
	for range 25 {
		var restored atomic.Bool
		var lines, late atomic.Int64
		restore := RedirectKlog(log.LoggerFunc(func(...any) error {
			lines.Add(1)
			if restored.Load() {
				late.Add(1)
			}
			return nil
		}))
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return lines.Load() > 0, nil
		}); err != nil {
			t.Fatalf("no klog line reached the logger: %v", err)
		}
		restore()
		restored.Store(true)
		if n := late.Load(); n > 0 {
			t.Fatalf("%d lines reached the logger after its restore returned", n)
		}
	}
}

// TestRedirectKlogAnyLogger checks a go-kit logger not made by NewLogger:
// the klog call site is its caller.
func TestRedirectKlogAnyLogger(t *testing.T) {
	var rec recorder
	restore := RedirectKlog(&rec)
	defer restore()
	klog.InfoS("hello", "k", "v")
	want := []any{level.Key(), level.InfoValue(), "caller", "log_test.go:" + strconv.Itoa(line()-1), "msg", "hello", "k", "v"}
	if len(rec.calls) != 1 || !reflect.DeepEqual(rec.calls[0], want) {
		t.Errorf("Log calls = %v, want [%v]", rec.calls, want)
	}
}

// TestNewLoggerDebugEnabled: NewLogger's logger tells a Framework whether
// it keeps debug lines (framework.Config.Logger), true only at level debug,
// and the lines it writes still name their own call site.
func TestNewLoggerDebugEnabled(t *testing.T) {
	for _, lvl := range []string{"debug", "info", "warn", "error"} {
		var buf bytes.Buffer
		logger, err := NewLogger(&buf, lvl, "logfmt")
		if err != nil {
			t.Fatal(err)
		}
		d, ok := logger.(interface{ DebugEnabled() bool })
		if !ok {
			t.Fatalf("level %s: NewLogger's logger %T has no DebugEnabled method", lvl, logger)
		}
		if got, want := d.DebugEnabled(), lvl == "debug"; got != want {
			t.Errorf("level %s: DebugEnabled() = %v, want %v", lvl, got, want)
		}
		_ = level.Error(logger).Log("msg", "direct")
		want := "log_test.go:" + strconv.Itoa(line()-1)
		recs := parseLines(t, "logfmt", buf.String())
		if len(recs) != 1 || recs[0].values["caller"] != want {
			t.Errorf("level %s: lines %v, want one with caller %s", lvl, recs, want)
		}
	}
}

// TestRedirectKlogNilPointerLogger: a logger holding a nil pointer is no
// logger, as nil is: klog's lines are dropped while the redirection lasts,
// without a panic in whichever goroutine logs.
func TestRedirectKlogNilPointerLogger(t *testing.T) {
	var l *panickingLogger
	restore := RedirectKlog(l)
	defer restore()
	klog.InfoS("a line for a nil-pointer logger", "k", "v")
	klog.ErrorS(errors.New("boom"), "an error line for a nil-pointer logger")
}

type panickingLogger struct{}

func (*panickingLogger) Log(...any) error { panic("logged through a nil pointer") }
