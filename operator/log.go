package operator

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/operatorkit/operatorkit/internal/nilptr"
)

// callerKey is the key of the call site in log lines.
const callerKey = "caller"

// NewLogger returns a go-kit logger that writes lines to w in format
// "logfmt" or "json", drops those below lvl ("debug", "info", "warn" or
// "error"; level.Debug and the like set a line's level), and adds a "ts"
// key (RFC 3339, UTC) and a "caller" key (file:line of the Log call; the
// last "caller" given wins, so a line that names its own call site, as
// RedirectKlog's do, shows that one). Concurrent Log calls are safe: each
// line is one Write to w. A line below lvl is dropped before its "ts" and
// "caller" are computed, so a debug line at level info costs about 250 ns
// (a Framework logs one per reconciliation). The logger also has a method
// DebugEnabled() bool, true only at level "debug": a framework.Framework
// given it (not wrapped in log.With) builds no debug line at all when it is
// false. The error names the bad value.
func NewLogger(w io.Writer, lvl, format string) (log.Logger, error) {
	opt, err := levelOption(lvl)
	if err != nil {
		return nil, fmt.Errorf("invalid log level %q: %s", lvl, err)
	}
	logger, err := formatLogger(format, log.NewSyncWriter(w))
	if err != nil {
		return nil, fmt.Errorf("invalid log format %q: %s", format, err)
	}
	// The filter comes first, so that a line it drops costs no timestamp
	// and no stack walk (a debug line per reconciliation, at level info,
	// would otherwise cost about 2 µs).
	return leveled{next: level.NewFilter(stamp{next: lastCaller{next: logger}}, opt), debug: lvl == "debug"}, nil
}

// leveled is NewLogger's logger: next, which filters by level, and whether
// that level keeps debug lines.
type leveled struct {
	next  log.Logger
	debug bool
}

func (l leveled) Log(keyvals ...any) error { return l.next.Log(keyvals...) }

// DebugEnabled reports whether debug lines are written; framework.New reads
// it (see framework.Config.Logger).
func (l leveled) DebugEnabled() bool { return l.debug }

// stamp adds "ts" and "caller" to each line, after its level when the line
// starts with one: the keys log.With(logger, "ts", log.DefaultTimestampUTC,
// "caller", log.DefaultCaller) would add, with the call site found by
// walking the stack past go-kit's loggers and this file's, whatever
// number of log.With contexts and filters the line went through.
type stamp struct{ next log.Logger }

func (s stamp) Log(keyvals ...any) error {
	kv := make([]any, 0, len(keyvals)+4)
	if len(keyvals) >= 2 && keyvals[0] == level.Key() {
		kv = append(kv, keyvals[:2]...)
		keyvals = keyvals[2:]
	}
	kv = append(kv, "ts", log.DefaultTimestampUTC(), callerKey, callSite())
	return s.next.Log(append(kv, keyvals...)...)
}

// callSite returns "file.go:line" of the first caller on the stack that is
// not a logger: not in go-kit's log packages, not one of this file's.
func callSite() string {
	var pcs [24]uintptr
	n := runtime.Callers(3, pcs[:]) // above runtime.Callers, callSite and stamp.Log
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if !isLogger(f.Function) {
			file := f.File
			if i := strings.LastIndexByte(file, '/'); i >= 0 {
				file = file[i+1:]
			}
			return file + ":" + strconv.Itoa(f.Line)
		}
		if !more {
			return ""
		}
	}
}

// isLogger reports whether fn, a function's full name, is part of the
// logging path: go-kit's loggers, and leveled, stamp and lastCaller.
func isLogger(fn string) bool {
	return strings.HasPrefix(fn, "github.com/go-kit/log.") || strings.HasPrefix(fn, "github.com/go-kit/log/") ||
		fn == "github.com/operatorkit/operatorkit/operator.leveled.Log" ||
		fn == "github.com/operatorkit/operatorkit/operator.stamp.Log" ||
		fn == "github.com/operatorkit/operatorkit/operator.lastCaller.Log"
}

// levelOption returns the level filter option of lvl.
func levelOption(lvl string) (level.Option, error) {
	switch lvl {
	case "debug":
		return level.AllowDebug(), nil
	case "info":
		return level.AllowInfo(), nil
	case "warn":
		return level.AllowWarn(), nil
	case "error":
		return level.AllowError(), nil
	}
	return nil, errors.New("want debug, info, warn or error")
}

// formatLogger returns a logger writing format to w.
func formatLogger(format string, w io.Writer) (log.Logger, error) {
	switch format {
	case "logfmt":
		return log.NewLogfmtLogger(w), nil
	case "json":
		return log.NewJSONLogger(w), nil
	}
	return nil, errors.New("want logfmt or json")
}

// lastCaller passes lines to next with at most one "caller" key: at the
// place of the first, with the value of the last.
type lastCaller struct{ next log.Logger }

func (l lastCaller) Log(keyvals ...any) error {
	first, last := -1, -1
	for i := 0; i+1 < len(keyvals); i += 2 {
		if k, ok := keyvals[i].(string); ok && k == callerKey {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first == last {
		return l.next.Log(keyvals...)
	}
	kv := make([]any, 0, len(keyvals))
	for i := 0; i < len(keyvals); i += 2 {
		if k, ok := keyvals[i].(string); ok && k == callerKey && i != first {
			continue
		}
		kv = append(kv, keyvals[i])
		if i+1 < len(keyvals) {
			kv = append(kv, keyvals[i+1])
		}
	}
	kv[first+1] = keyvals[last+1]
	return l.next.Log(kv...)
}

// RedirectKlog sends what klog logs into logger, so that a process writes
// one format: client-go (reflectors, leader election, event broadcasters)
// and other Kubernetes libraries log through klog, by its functions
// (klog.InfoS, klog.Errorf, ...) and by the contextual loggers
// klog.FromContext and klog.Background return. The first call in a process
// installs a logr.LogSink with klog.SetLoggerWithOptions, as the contextual
// logger too, once and for good; every call, that one included, then only
// points the sink at logger. Each klog line becomes one Log call with:
//
//   - level info for Info at V(0), level debug with a "v" key holding the
//     verbosity for V(1) and above, level error for Error (klog passes
//     only its errors as errors: its warnings and the message of
//     klog.Fatal arrive as infos);
//   - "msg", the message; "err", the error of an Error call (when not
//     nil); the keys and values of WithValues, then those of the call;
//   - "logger", the names given with WithName joined with "/", if any;
//   - "caller", the file:line of the klog (or logr) call, which replaces
//     logger's own caller in a logger from NewLogger (a logger that adds
//     a caller of its own otherwise shows both).
//
// klog's verbosity (its -v and -vmodule flags, see klog.InitFlags; 0 by
// default) still decides which V(n) lines are logged at all; logger's level
// filter then drops the debug ones unless it allows debug.
//
// The first call changes klog's process-wide state, which klog does not
// guard: make it at start, before any client is made. Later calls, and
// restores, are safe at any time, also while client-go's goroutines log
// (a Command redirects klog for each run, and the watches of a plan may
// outlive it): each line goes to the logger of the latest RedirectKlog
// not yet restored. The returned restore removes the redirection to logger,
// if a later RedirectKlog has not replaced it, and once it returns no klog
// line reaches logger any more. Without a redirection klog's lines are
// written in klog's text format (its header, the quoted message, key=value
// pairs) to stderr; klog's own output settings (klog.SetOutput, its log file
// flags) no longer apply after the first call, and a logger set before it
// is not reinstated. A logger set with klog.SetLogger after the first call
// replaces the sink for good. A nil logger (or one holding a nil pointer)
// discards klog's lines while the redirection lasts.
func RedirectKlog(logger log.Logger) (restore func()) {
	if nilptr.Is(logger) { // nor a nil pointer in the interface
		logger = log.NewNopLogger()
	}
	installKlogSink()
	d := &klogDest{logger: logger}
	klogRedirect.mu.Lock()
	klogRedirect.dest = d
	klogRedirect.mu.Unlock()
	return func() {
		klogRedirect.mu.Lock()
		if klogRedirect.dest == d {
			klogRedirect.dest = nil
		}
		klogRedirect.mu.Unlock()
	}
}

// installKlogSink makes a klogSink klog's logger, once per process: klog
// reads its logger without a lock, so that it must not change while client-go
// logs; what changes is klogRedirect.
var installKlogSink = sync.OnceFunc(func() {
	klog.SetLoggerWithOptions(logr.New(&klogSink{}), klog.ContextualLogger(true))
})

// klogRedirect is where the klogSink writes. The sink holds mu for reading
// while it writes a line, so that a restore, which takes it for writing,
// returns only when no line goes to its logger any more.
var klogRedirect struct {
	mu   sync.RWMutex
	dest *klogDest // of the latest RedirectKlog not restored; nil: text
	// text writes klog's text format to stderr (tests change it); its
	// call depth is that of a sink called by logr.Logger.
	text logr.LogSink
}

func init() {
	klogRedirect.text = textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(os.Stderr))).GetSink()
}

// klogDest is the logger of one RedirectKlog, by pointer, so that its
// restore finds out whether it is still the destination.
type klogDest struct{ logger log.Logger }

// klogSink is a logr.LogSink writing to the logger of klogRedirect.
type klogSink struct {
	name      string // WithName's names joined with "/"
	values    []any  // WithValues's keys and values
	callDepth int    // frames between the caller of interest and Info or Error
}

var (
	_ logr.LogSink          = (*klogSink)(nil)
	_ logr.CallDepthLogSink = (*klogSink)(nil)
)

// Init records the frames that logr adds.
func (s *klogSink) Init(info logr.RuntimeInfo) { s.callDepth += info.CallDepth }

// Enabled applies klog's verbosity (-v and -vmodule, the latter at the
// call site), as klog's own logr does: with the sink as the contextual
// logger, logr.Logger.V calls arrive here without passing through klog.
func (s *klogSink) Enabled(lvl int) bool {
	return klog.VDepth(s.callDepth+1, klog.Level(lvl)).Enabled()
}

// Info logs at level info for V(0), debug above.
func (s *klogSink) Info(lvl int, msg string, keysAndValues ...any) {
	klogRedirect.mu.RLock()
	defer klogRedirect.mu.RUnlock()
	if klogRedirect.dest == nil {
		s.text().Info(lvl, msg, keysAndValues...)
		return
	}
	logger := level.Info(klogRedirect.dest.logger)
	var v []any
	if lvl > 0 {
		logger = level.Debug(klogRedirect.dest.logger)
		v = []any{"v", lvl}
	}
	s.log(logger, s.caller(), msg, v, keysAndValues)
}

// Error logs at level error.
func (s *klogSink) Error(err error, msg string, keysAndValues ...any) {
	klogRedirect.mu.RLock()
	defer klogRedirect.mu.RUnlock()
	if klogRedirect.dest == nil {
		s.text().Error(err, msg, keysAndValues...)
		return
	}
	var e []any
	if err != nil {
		e = []any{"err", err}
	}
	s.log(level.Error(klogRedirect.dest.logger), s.caller(), msg, e, keysAndValues)
}

// text returns klogRedirect.text with s's name, values and call depth, for
// a call from Info or Error. The caller holds klogRedirect.mu.
func (s *klogSink) text() logr.LogSink {
	t := klogRedirect.text
	if s.name != "" {
		t = t.WithName(s.name)
	}
	if len(s.values) > 0 {
		t = t.WithValues(s.values...)
	}
	// t's own depth is the one frame of the Info or Error that calls it;
	// s.callDepth frames are above that one.
	if cd, ok := t.(logr.CallDepthLogSink); ok {
		t = cd.WithCallDepth(s.callDepth)
	}
	return t
}

// caller returns the file:line of the call s.callDepth frames above the
// caller of caller (Info or Error), or "" when the stack is shorter.
func (s *klogSink) caller() string {
	_, file, line, ok := runtime.Caller(s.callDepth + 2)
	if !ok {
		return ""
	}
	return file[strings.LastIndexByte(file, '/')+1:] + ":" + strconv.Itoa(line)
}

func (s *klogSink) log(logger log.Logger, caller, msg string, extra, keysAndValues []any) {
	kv := make([]any, 0, 6+len(extra)+len(s.values)+len(keysAndValues))
	if caller != "" {
		kv = append(kv, callerKey, caller)
	}
	if s.name != "" {
		kv = append(kv, "logger", s.name)
	}
	kv = append(kv, "msg", msg)
	kv = append(kv, extra...)
	kv = append(kv, s.values...)
	kv = append(kv, keysAndValues...)
	_ = logger.Log(kv...)
}

// WithValues returns a sink adding keysAndValues to every line.
func (s *klogSink) WithValues(keysAndValues ...any) logr.LogSink {
	c := *s
	c.values = append(s.values[:len(s.values):len(s.values)], keysAndValues...)
	return &c
}

// WithName returns a sink whose lines have name appended to the "logger"
// key.
func (s *klogSink) WithName(name string) logr.LogSink {
	c := *s
	if c.name == "" {
		c.name = name
	} else {
		c.name += "/" + name
	}
	return &c
}

// WithCallDepth returns a sink attributing lines depth more frames up.
func (s *klogSink) WithCallDepth(depth int) logr.LogSink {
	c := *s
	c.callDepth += depth
	return &c
}
