package retry_test

import (
	"context"
	"errors"
	"fmt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"go.uber.org/goleak"

	"github.com/operatorkit/operatorkit/context/reconciliationcanceledcontext"
	"github.com/operatorkit/operatorkit/context/resourcecanceledcontext"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/crud/crudtest"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errBoom = errors.New("boom")

// flaky is a plain resource whose operations return errs in turn (the last
// one repeats) and count their calls.
type flaky struct {
	mu    sync.Mutex
	errs  []error
	calls int
	hook  func() // run on every call
}

func (f *flaky) Name() string { return "flaky" }

func (f *flaky) EnsureCreated(context.Context, any) error { return f.call() }

func (f *flaky) EnsureDeleted(context.Context, any) error { return f.call() }

func (f *flaky) call() error {
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.mu.Unlock()
	if f.hook != nil {
		f.hook()
	}
	if len(f.errs) == 0 {
		return nil
	}
	return f.errs[min(n, len(f.errs))-1]
}

func (f *flaky) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// zeroRetries allows n retries without waiting.
func zeroRetries(n uint64) func() backoff.BackOff {
	return func() backoff.BackOff { return backoff.WithMaxRetries(&backoff.ZeroBackOff{}, n) }
}

// logRecorder is a log.Logger keeping every record.
type logRecorder struct {
	mu      sync.Mutex
	records [][]any
}

func (l *logRecorder) Log(keyvals ...any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, keyvals)
	return nil
}

func (l *logRecorder) Records() []map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]string
	for _, kv := range l.records {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = fmt.Sprint(kv[i+1])
		}
		out = append(out, m)
	}
	return out
}

func TestNew(t *testing.T) {
	_, err := retry.New(retry.Config{})
	if !errors.Is(err, retry.ErrInvalidConfig) || !strings.Contains(err.Error(), "retry.Config.Resource must not be empty") {
		t.Fatalf("New() error = %v, want ErrInvalidConfig naming Resource", err)
	}
	var never *crud.Resource // a typed nil: its Name would panic
	if _, err := retry.New(retry.Config{Resource: never}); !errors.Is(err, retry.ErrInvalidConfig) {
		t.Fatalf("New() with a nil *crud.Resource = %v, want ErrInvalidConfig", err)
	}
	if _, err := retry.New(retry.Config{Resource: &flaky{}, Logger: (*logRecorder)(nil)}); !errors.Is(err, retry.ErrInvalidConfig) || !strings.Contains(err.Error(), "retry.Config.Logger is a nil *retry_test.logRecorder") {
		t.Fatalf("New() with a nil *logRecorder Logger = %v, want ErrInvalidConfig naming Logger", err)
	}
	nilBackOff := func() backoff.BackOff { return nil }
	if _, err := retry.New(retry.Config{Resource: &flaky{}, BackOffFactory: nilBackOff}); !errors.Is(err, retry.ErrInvalidConfig) || !strings.Contains(err.Error(), "retry.Config.BackOffFactory returned a nil") {
		t.Fatalf("New() with a BackOffFactory returning nil = %v, want ErrInvalidConfig naming BackOffFactory", err)
	}
	shared := backoff.NewExponentialBackOff()
	if _, err := retry.New(retry.Config{Resource: &flaky{}, BackOffFactory: func() backoff.BackOff { return shared }}); !errors.Is(err, retry.ErrInvalidConfig) || !strings.Contains(err.Error(), "retry.Config.BackOffFactory returned the same *backoff.ExponentialBackOff twice") {
		t.Fatalf("New() with a BackOffFactory returning one backoff = %v, want ErrInvalidConfig naming BackOffFactory", err)
	}
	if _, err := retry.New(retry.Config{Resource: &flaky{}, BackOffFactory: func() backoff.BackOff { return &backoff.ZeroBackOff{} }}); !errors.Is(err, retry.ErrInvalidConfig) || !strings.Contains(err.Error(), "retry.Config.BackOffFactory's *backoff.ZeroBackOff retries without waiting (under 1ms) and without stopping") {
		t.Fatalf("New() with a BackOffFactory that retries at once for ever = %v, want ErrInvalidConfig naming BackOffFactory", err)
	}
	if _, err := retry.New(retry.Config{Resource: &flaky{}, BackOffFactory: func() backoff.BackOff { return backoff.WithMaxRetries(&backoff.ZeroBackOff{}, 3) }}); err != nil {
		t.Fatalf("New() with a BackOffFactory of three retries at once = %v", err)
	}
	f := &flaky{}
	r, err := retry.New(retry.Config{Resource: f})
	if err != nil {
		t.Fatal(err)
	}
	if r.Unwrap() != resource.Interface(f) || r.Name() != "flaky" {
		t.Fatalf("Unwrap() = %v, Name() = %q", r.Unwrap(), r.Name())
	}
	if _, ok := r.WrapOps(func(o crud.Ops) crud.Ops { return o }); ok {
		t.Fatal("WrapOps() ok = true for a wrapper around a plain resource")
	}
}

func TestRetry(t *testing.T) {
	permanent := retry.Permanent(errBoom)
	tests := []struct {
		name      string
		errs      []error
		retries   uint64
		wantCalls int
		wantErr   error
	}{
		{name: "success", errs: nil, retries: 3, wantCalls: 1},
		{name: "succeeds on the third attempt", errs: []error{errBoom, errBoom, nil}, retries: 3, wantCalls: 3},
		{name: "bounded", errs: []error{errBoom}, retries: 2, wantCalls: 3, wantErr: errBoom},
		{name: "no retries", errs: []error{errBoom}, retries: 0, wantCalls: 1, wantErr: errBoom},
		{name: "permanent is not retried", errs: []error{permanent}, retries: 3, wantCalls: 1, wantErr: errBoom},
		{name: "wrapped permanent is not retried", errs: []error{fmt.Errorf("step: %w", permanent)}, retries: 3, wantCalls: 1, wantErr: errBoom},
	}
	for _, tt := range tests {
		for _, op := range []string{resource.OperationEnsureCreated, resource.OperationEnsureDeleted} {
			t.Run(tt.name+"/"+op, func(t *testing.T) {
				f := &flaky{errs: tt.errs}
				logs := &logRecorder{}
				r, err := retry.New(retry.Config{Resource: f, BackOffFactory: zeroRetries(tt.retries), Logger: logs})
				if err != nil {
					t.Fatal(err)
				}
				ensure := r.EnsureCreated
				if op == resource.OperationEnsureDeleted {
					ensure = r.EnsureDeleted
				}
				err = ensure(context.Background(), nil)
				if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				if f.Calls() != tt.wantCalls {
					t.Fatalf("calls = %d, want %d", f.Calls(), tt.wantCalls)
				}
				if len(tt.errs) > 0 && retry.IsPermanent(tt.errs[0]) && !retry.IsPermanent(err) {
					t.Fatal("the permanent mark was lost")
				}
				// One warning per retry, numbered from 1.
				records := logs.Records()
				if wantRetries := tt.wantCalls - 1; len(records) != wantRetries {
					t.Fatalf("%d log records, want %d: %v", len(records), tt.wantCalls-1, records)
				}
				for i, rec := range records {
					if rec["level"] != "warn" || rec["resource"] != "flaky" || rec["operation"] != op || rec["attempt"] != fmt.Sprint(i+1) || rec["err"] != "boom" {
						t.Errorf("log record %d = %v", i, rec)
					}
				}
			})
		}
	}
}

func TestRetryContext(t *testing.T) {
	errCause := errors.New("shutting down")
	tests := []struct {
		name   string
		cancel func(cancel context.CancelCauseFunc) func() // returns the resource's hook
	}{
		{name: "done before waiting", cancel: func(cancel context.CancelCauseFunc) func() {
			return func() { cancel(errCause) }
		}},
		{name: "done while waiting", cancel: func(cancel context.CancelCauseFunc) func() {
			return func() { time.AfterFunc(20*time.Millisecond, func() { cancel(errCause) }) }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			var once sync.Once
			hook := tt.cancel(cancel)
			f := &flaky{errs: []error{errBoom}, hook: func() { once.Do(hook) }}
			r, err := retry.New(retry.Config{
				Resource:       f,
				BackOffFactory: func() backoff.BackOff { return backoff.NewConstantBackOff(time.Hour) },
			})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err = r.EnsureCreated(ctx, nil)
			if !errors.Is(err, errBoom) || !errors.Is(err, errCause) {
				t.Fatalf("error = %v, want it to join %v and %v", err, errBoom, errCause)
			}
			if f.Calls() != 1 {
				t.Fatalf("calls = %d, want 1", f.Calls())
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("returned after %v", d)
			}
		})
	}
}

func TestRetryCrudPerStep(t *testing.T) {
	p := crud.NewPatch()
	p.SetUpdateChange("u")
	tests := []struct {
		name      string
		errs      map[string][]error
		wantCalls map[string]int
		wantErr   error
	}{
		{
			name:      "apply fails once",
			errs:      map[string][]error{crud.StepApplyUpdateChange: {errBoom, nil}},
			wantCalls: map[string]int{crud.StepGetCurrentState: 1, crud.StepGetDesiredState: 1, crud.StepNewUpdatePatch: 1, crud.StepApplyUpdateChange: 2},
		},
		{
			name:      "read fails twice",
			errs:      map[string][]error{crud.StepGetDesiredState: {errBoom, errBoom, nil}},
			wantCalls: map[string]int{crud.StepGetCurrentState: 1, crud.StepGetDesiredState: 3, crud.StepNewUpdatePatch: 1, crud.StepApplyUpdateChange: 1},
		},
		{
			name:      "apply always fails",
			errs:      map[string][]error{crud.StepApplyUpdateChange: {errBoom}},
			wantCalls: map[string]int{crud.StepGetCurrentState: 1, crud.StepApplyUpdateChange: 4},
			wantErr:   errBoom,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := &crudtest.Ops{Resource: "configmap", Patch: p, Errors: tt.errs}
			c, err := crud.New(crud.Config{Ops: ops})
			if err != nil {
				t.Fatal(err)
			}
			r, err := retry.New(retry.Config{Resource: c, BackOffFactory: zeroRetries(3)})
			if err != nil {
				t.Fatal(err)
			}
			err = r.EnsureCreated(context.Background(), nil)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "configmap: apply update change: ") {
				t.Fatalf("error = %q does not name resource and step", err)
			}
			for step, want := range tt.wantCalls {
				if got := ops.Count(step); got != want {
					t.Errorf("%s called %d times, want %d", step, got, want)
				}
			}
			if r.Unwrap() != resource.Interface(c) {
				t.Fatal("Unwrap() does not return the crud resource")
			}
		})
	}
}

func TestDefaultBackOffFactory(t *testing.T) {
	factory := retry.DefaultBackOffFactory()
	b := factory()
	var n int
	var total time.Duration
	for d := b.NextBackOff(); d != backoff.Stop; d = b.NextBackOff() {
		total += d
		if n++; n > 10 {
			t.Fatal("backoff does not stop")
		}
	}
	if n < 3 || n > 5 {
		t.Fatalf("backoff allows %d retries, want 3 to 5", n)
	}
	if total > 5*time.Second {
		t.Fatalf("backoff waits %v in total, want at most 5s", total)
	}
}

func TestPermanent(t *testing.T) {
	if retry.Permanent(nil) != nil {
		t.Fatal("Permanent(nil) != nil")
	}
	err := retry.Permanent(errBoom)
	if !retry.IsPermanent(err) || !retry.IsPermanent(fmt.Errorf("x: %w", err)) || retry.IsPermanent(errBoom) {
		t.Fatal("IsPermanent is wrong")
	}
	if !errors.Is(err, errBoom) || err.Error() != "boom" {
		t.Fatalf("Permanent(errBoom) = %q does not keep its cause", err)
	}
}

// TestAPIErrorsThatARetryCannotFix: a conflict or a forbidden answer is
// returned after one call, unmarked, so the framework requeues with a fresh
// read; a server timeout is retried, unless the server asked for a wait
// (Retry-After: client-go's REST client retried it already), which the
// framework honours.
func TestAPIErrorsThatARetryCannotFix(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	tests := []struct {
		name      string
		err       error
		wantCalls int
	}{
		{"conflict", apierrors.NewConflict(gr, "a", errors.New("the object has been modified")), 1},
		{"forbidden", apierrors.NewForbidden(gr, "a", errors.New("no")), 1},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "a", nil), 1},
		{"server timeout", apierrors.NewServerTimeout(gr, "get", 0), 3},
		{"server timeout with Retry-After", apierrors.NewServerTimeout(gr, "get", 1), 1},
		{"429 with Retry-After", apierrors.NewTooManyRequests("the server is shedding load", 2), 1},
		{"plain error", errors.New("connection reset"), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &flaky{errs: []error{tt.err}}
			r, err := retry.New(retry.Config{Resource: f, BackOffFactory: zeroRetries(2)})
			if err != nil {
				t.Fatal(err)
			}
			err = r.EnsureCreated(context.Background(), nil)
			if !errors.Is(err, tt.err) || retry.IsPermanent(err) {
				t.Fatalf("EnsureCreated() = %v, want %v unmarked", err, tt.err)
			}
			if calls := f.Calls(); calls != tt.wantCalls {
				t.Fatalf("calls = %d, want %d", calls, tt.wantCalls)
			}
		})
	}
}

// cancelingResource cancels itself (or the whole reconciliation) and
// returns a retryable error in the same call.
type cancelingResource struct {
	cancel func(context.Context)
	calls  int
}

func (c *cancelingResource) Name() string { return "canceling" }
func (c *cancelingResource) EnsureCreated(ctx context.Context, _ any) error {
	c.calls++
	c.cancel(ctx)
	return errors.New("try again later")
}
func (c *cancelingResource) EnsureDeleted(ctx context.Context, obj any) error {
	return c.EnsureCreated(ctx, obj)
}

// TestNoRetryAfterCancel: a resource that canceled itself, or the
// reconciliation, has nothing more to do this time: its error is not
// retried (it was, until the backoff gave up).
func TestNoRetryAfterCancel(t *testing.T) {
	for name, cancel := range map[string]func(context.Context){
		"resource":       resourcecanceledcontext.SetCanceled,
		"reconciliation": reconciliationcanceledcontext.SetCanceled,
	} {
		t.Run(name, func(t *testing.T) {
			c := &cancelingResource{cancel: cancel}
			r, err := retry.New(retry.Config{Resource: c, BackOffFactory: zeroRetries(3)})
			if err != nil {
				t.Fatal(err)
			}
			ctx := reconciliationcanceledcontext.NewContext(resourcecanceledcontext.NewContext(context.Background()))
			if err := r.EnsureCreated(ctx, nil); err == nil {
				t.Error("EnsureCreated() = nil, want the resource's error")
			}
			if c.calls != 1 {
				t.Errorf("calls = %d after the resource canceled, want 1", c.calls)
			}
		})
	}
}

// TestContextErrorSaidOnce: a resource that returns its context's error
// when the context ends gets that error back once, not joined with itself
// ("context canceled\ncontext canceled"); it still matches with errors.Is.
func TestContextErrorSaidOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := &flaky{errs: []error{errBoom, context.Canceled}}
	f.hook = func() {
		if f.Calls() == 2 {
			cancel()
		}
	}
	r, err := retry.New(retry.Config{Resource: f, BackOffFactory: zeroRetries(5)})
	if err != nil {
		t.Fatal(err)
	}
	err = r.EnsureCreated(ctx, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("EnsureCreated() = %v, want context.Canceled", err)
	}
	if n := strings.Count(err.Error(), context.Canceled.Error()); n != 1 {
		t.Errorf("EnsureCreated() = %q, says %q %d times, want once", err, context.Canceled, n)
	}
}

// TestAfterIsNotRetriedInPlace: an error marked with After is returned
// after one call, with its mark and its delay, whatever Retryable says, by
// a whole-operation retry and by a per-step one; it was retried in place
// at once, sooner than the API asked.
func TestAfterIsNotRetriedInPlace(t *testing.T) {
	rateLimited := retry.After(errBoom, 30*time.Second)
	t.Run("whole operation", func(t *testing.T) {
		for _, op := range []string{resource.OperationEnsureCreated, resource.OperationEnsureDeleted} {
			f := &flaky{errs: []error{fmt.Errorf("provider: %w", rateLimited), nil}}
			r, err := retry.New(retry.Config{Resource: f, BackOffFactory: zeroRetries(3), Retryable: func(error) bool { return true }})
			if err != nil {
				t.Fatal(err)
			}
			run := r.EnsureCreated
			if op == resource.OperationEnsureDeleted {
				run = r.EnsureDeleted
			}
			err = run(context.Background(), nil)
			if d, ok := retry.DelayOf(err); !ok || d != 30*time.Second || !errors.Is(err, errBoom) || retry.IsPermanent(err) {
				t.Fatalf("%s = %v (delay %s, %t), want errBoom asking for 30s, not permanent", op, err, d, ok)
			}
			if n := f.Calls(); n != 1 {
				t.Fatalf("%s: calls = %d, want 1", op, n)
			}
		}
	})
	t.Run("per step", func(t *testing.T) {
		p := crud.NewPatch()
		p.SetUpdateChange("u")
		ops := &crudtest.Ops{Resource: "record", Patch: p, Errors: map[string][]error{crud.StepApplyUpdateChange: {rateLimited, nil}}}
		c, err := crud.New(crud.Config{Ops: ops})
		if err != nil {
			t.Fatal(err)
		}
		r, err := retry.New(retry.Config{Resource: c, BackOffFactory: zeroRetries(3)})
		if err != nil {
			t.Fatal(err)
		}
		err = r.EnsureCreated(context.Background(), nil)
		if d, ok := retry.DelayOf(err); !ok || d != 30*time.Second || !errors.Is(err, errBoom) {
			t.Fatalf("EnsureCreated() = %v (delay %s, %t), want errBoom asking for 30s", err, d, ok)
		}
		if n := ops.Count(crud.StepApplyUpdateChange); n != 1 {
			t.Fatalf("apply update change called %d times, want 1", n)
		}
	})
}

// TestAfterAndDelayOf pins After's and DelayOf's contract: the message
// and chain are err's; nil stays nil; a delay of 0 or less asks for no
// wait; the outermost mark counts; a Kubernetes API server's Retry-After
// is a delay too, one of 0 is not; Permanent keeps its mark.
func TestAfterAndDelayOf(t *testing.T) {
	if err := retry.After(nil, time.Second); err != nil {
		t.Errorf("After(nil, 1s) = %v, want nil", err)
	}
	for _, d := range []time.Duration{0, -time.Second} {
		if err := retry.After(errBoom, d); err != errBoom {
			t.Errorf("After(errBoom, %s) = %v, want errBoom as it is", d, err)
		}
	}
	err := retry.After(errBoom, 2*time.Second)
	if err.Error() != "boom" || !errors.Is(err, errBoom) || retry.IsPermanent(err) {
		t.Errorf("After(errBoom, 2s) = %q, want boom, matching errBoom, not permanent", err)
	}
	gr := schema.GroupResource{Resource: "configmaps"}
	for _, tt := range []struct {
		name string
		err  error
		want time.Duration
		ok   bool
	}{
		{"nil", nil, 0, false},
		{"plain error", errBoom, 0, false},
		{"After", err, 2 * time.Second, true},
		{"After wrapped", fmt.Errorf("record: get current state: %w", err), 2 * time.Second, true},
		{"outermost After", retry.After(fmt.Errorf("x: %w", err), time.Minute), time.Minute, true},
		{"After of a 429", retry.After(apierrors.NewTooManyRequests("slow down", 1), 5*time.Second), 5 * time.Second, true},
		{"permanent", retry.Permanent(err), 2 * time.Second, true},
		{"429 with Retry-After", apierrors.NewTooManyRequests("slow down", 3), 3 * time.Second, true},
		{"429 with Retry-After, wrapped", fmt.Errorf("apply: %w", apierrors.NewTooManyRequests("slow down", 3)), 3 * time.Second, true},
		{"server timeout without Retry-After", apierrors.NewServerTimeout(gr, "get", 0), 0, false},
		{"conflict", apierrors.NewConflict(gr, "a", errBoom), 0, false},
	} {
		if d, ok := retry.DelayOf(tt.err); d != tt.want || ok != tt.ok {
			t.Errorf("%s: DelayOf(%v) = %s, %t; want %s, %t", tt.name, tt.err, d, ok, tt.want, tt.ok)
		}
	}
	if !retry.IsPermanent(retry.After(retry.Permanent(errBoom), time.Second)) {
		t.Error("After(Permanent(err), d) lost the permanent mark")
	}
}
