package operator

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
)

// Command is the command line of an operator binary, for its main function
// (`os.Exit(cmd.Run(ctx, os.Args[1:], os.Stdout, os.Stderr))`):
//
//	<Name> [flags]                                 run the operator until ctx ends
//	<Name> plan [flags] (namespace/name... | --all) print what it would change now
//
// Running binds Options, FrameworkOptions and the binary's own flags
// (BindFlags), parses and validates them, builds the logger, resolves the
// cluster, runs Check, creates the Operator, lets New add the Framework and
// runs the Operator. plan binds only the client flags (Options.
// BindClientFlags), --namespace, --all and SetFlag, and prints the plans of
// Operator.Plan, computed by the Framework New adds in dry-run mode from
// briefly started caches; it writes nothing to the cluster. Both log to
// stderr with the logger of Options.NewLogger, and send client-go's logs
// to it with RedirectKlog while they run.
//
// plan takes each object by its key: namespace/name, or the name alone of
// a cluster-scoped object (the scope is the API server's discovery's) or
// of an object in --namespace. The name alone of a namespaced object
// without --namespace is a bad argument that names the form wanted.
//
// --shard and --dry-run do not go together: the replica that assigns the
// objects writes their shard label.
//
// Exit codes: 0 after a clean stop (also when ctx ends, or the first
// signal comes, while Check or New runs: the error they return then is
// logged, not a failure), -h or --help (the usage goes to stdout), or a
// printed plan; 2 for a bad flag or argument; 1 when the
// cluster, Check, New or the Operator fail, or a plan fails for another
// reason than its object (a plan stopped by a permanent error, such as an
// invalid spec, or by no resource set is a finding, printed, not a
// failure), or a second signal cut the shutdown short. Every failure is one
// line "<Name>: <error>" on stderr.
//
// Signals: while Run runs, the first SIGINT or SIGTERM ends its context (a
// clean stop, as the end of ctx: the reconciliations in flight finish,
// within ShutdownTimeout, and the Lease is released); a second one ends Run
// at once, with exit code 1 and the line "<Name>: second signal
// (<signal>): stopped without waiting for the shutdown to end", leaving
// what still runs to the process's exit (main must exit when Run returns,
// as os.Exit(cmd.Run(...)) does): the Lease is then not released, and the
// other replicas wait for it to expire. This is controller-runtime's
// signal handler's behaviour. A main that catches the signals itself
// (signal.NotifyContext) may go on doing so: each signal reaches both.
type Command struct {
	// Name names the binary: the prefix of its error lines and usage, the
	// Operator's name, the default LeaderElectionID. Required: Run fails
	// without it (exit code 1), as it does without New, with SetFlag and
	// Sets not both set or both empty, and with a SetFlag that plan has
	// already or that is no flag name.
	Name string
	// Summary follows the usage line of -h, before the flags: what the
	// binary does.
	Summary string
	// Objects is the plural noun of the reconciled objects in the plan
	// subcommand's messages ("WebApps"). Defaults to "objects".
	Objects string
	// Options hold the defaults of the operator's flags (see
	// Options.BindFlags); LeaderElectionID defaults to Name. After parsing,
	// an empty LeaderElectionNamespace becomes FrameworkOptions.Namespace,
	// so that the Lease is beside the objects.
	Options Options
	// FrameworkOptions hold the defaults of the Framework's flags (see
	// FrameworkOptions.BindFlags).
	FrameworkOptions FrameworkOptions
	// BindFlags, when set, registers the binary's own flags on the
	// operator's flag set (not on plan's).
	BindFlags func(fs *flag.FlagSet)
	// Check, when set, runs with the cluster's config before the Operator
	// is created: a preflight (the API server answers, the CRD is served,
	// the identity holds its permissions) whose error ends the command
	// with exit code 1 (0 when ctx ended meanwhile: see Run). For plan, opts has only the client options and
	// fopts only Namespace and DryRun (true).
	Check func(ctx context.Context, restConfig *rest.Config, opts Options, fopts FrameworkOptions) error
	// New adds the binary's Framework to op (see Operator.NewFramework),
	// configured by fopts and logging to logger, and returns it. Required.
	New func(op *Operator, fopts FrameworkOptions, logger log.Logger) (*framework.Framework, error)
	// SetFlag, when set, names a flag of plan that plans every object
	// under the resource set Sets[value] instead of the one the router
	// picks; a value that Sets lacks is a bad flag.
	SetFlag string
	// Sets maps the values of SetFlag to resource set names.
	Sets map[string]string
	// ShardResources are the resources whose objects --shard spreads over
	// the replicas (Sharding.Resources): those of the informers New gives
	// its Framework. Empty: the binary does not shard, and --shard is a
	// bad flag.
	ShardResources []schema.GroupVersionResource
	// ShardChildren are the kinds of the sharded objects' children that
	// --shard caches per replica (Sharding.Children): their child
	// resources must copy the shard label (child.Config.OwnerLabels:
	// Operator.ShardLabels()). Optional: without it every replica caches
	// every child.
	ShardChildren []schema.GroupVersionResource
}

// Run runs the command with args (without the program name) and returns
// its exit code; see Command, and its signals. Run serializes its writes to
// stderr, those of its logger from any goroutine (client-go's too) and its
// failure line, so stderr need not be safe for concurrent use (a
// bytes.Buffer in a test). Nothing is written to stdout or stderr once Run
// returned: the lines of what still runs then (reconciliations past
// ShutdownTimeout, or after a second signal) are dropped, so that the
// caller may read its buffers.
func (c Command) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out, errw := &lockedWriter{w: stdout}, &lockedWriter{w: stderr}
	defer out.close()
	defer errw.close()
	ctx, forced, stopSignals := notifySignals(ctx)
	defer stopSignals()
	code := make(chan int, 1)
	go func() { code <- c.run(ctx, args, out, errw) }()
	select {
	case n := <-code:
		return n
	case sig := <-forced:
		return fail(errw, c.Name, 1, fmt.Errorf("second signal (%v): stopped without waiting for the shutdown to end", sig))
	}
}

// notifySignals returns a copy of ctx that ends at the first SIGINT or
// SIGTERM, and a channel that receives the second one, until stop is
// called.
func notifySignals(ctx context.Context) (_ context.Context, forced <-chan os.Signal, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	// Room for both: the runtime drops what a full channel cannot take.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	second := make(chan os.Signal, 1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-done:
			return
		case <-sigs:
			cancel()
		}
		select {
		case <-done:
		case sig := <-sigs:
			second <- sig
		}
	})
	return ctx, second, func() {
		signal.Stop(sigs)
		close(done)
		wg.Wait()
		cancel()
	}
}

// run is Run without the signals.
func (c Command) run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if err := c.validate(); err != nil {
		name := c.Name
		if name == "" {
			name = "operator"
		}
		return fail(stderr, name, 1, err)
	}
	if len(args) > 0 && args[0] == "plan" {
		return c.runPlan(ctx, args[1:], stdout, stderr)
	}
	opts, fopts := c.Options, c.FrameworkOptions
	if opts.LeaderElectionID == "" {
		opts.LeaderElectionID = c.Name
	}
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	opts.BindFlags(fs)
	fopts.BindFlags(fs)
	// The Lease defaults to the objects' namespace here (below), not to
	// the pod's as Options.BindFlags says.
	fs.Lookup(flagLeaderElectionNamespace).Usage = `namespace of the leader election Lease (default: --namespace if set, else the pod's namespace, else "default")`
	if c.BindFlags != nil {
		c.BindFlags(fs)
	}
	usage := fmt.Sprintf("usage: %s [flags]\n       %s plan [flags] (namespace/name... | --all)\n\n%s\nFlags:", c.Name, c.Name, c.Summary)
	switch err := ParseFlags(fs, args, usage, stdout); {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		return fail(stderr, c.Name, 2, err)
	case fs.NArg() > 0 && fs.Arg(0) == "plan":
		return fail(stderr, c.Name, 2, fmt.Errorf("plan comes first, before its flags: %s plan [flags] (namespace/name... | --all)", c.Name))
	case fs.NArg() > 0:
		return fail(stderr, c.Name, 2, fmt.Errorf("unexpected argument %q (the only subcommand is plan)", fs.Arg(0)))
	}
	if err := errors.Join(opts.Validate(), fopts.Validate()); err != nil {
		return fail(stderr, c.Name, 2, err)
	}
	if opts.Shard && len(c.ShardResources) == 0 {
		return fail(stderr, c.Name, 2, fmt.Errorf("flag --%s: %s does not shard (its Command has no ShardResources)", flagShard, c.Name))
	}
	if opts.Shard && fopts.DryRun {
		// The assigning replica labels the objects: a dry run writes nothing.
		return fail(stderr, c.Name, 2, fmt.Errorf("flag --%s writes the shard label onto the objects: not with --dry-run", flagShard))
	}
	if opts.LeaderElectionNamespace == "" {
		opts.LeaderElectionNamespace = fopts.Namespace
	}
	logger, _ := opts.NewLogger(stderr)
	defer RedirectKlog(logger)()
	op, _, err := c.operator(ctx, opts, fopts, c.Name, logger)
	switch {
	case err != nil && ctx.Err() != nil:
		// ctx ended while Check or New ran (a signal while it starts):
		// a clean stop, as during Run, not their failure.
		level.Info(logger).Log("msg", "stopped before starting: the context ended", "err", err)
		return 0
	case err == nil:
		err = op.Run(ctx)
	}
	if err != nil {
		return fail(stderr, c.Name, 1, err)
	}
	level.Info(logger).Log("msg", "stopped cleanly")
	return 0
}

// validate checks the fields of c that no flag can fix: a Command the
// binary's author got wrong fails every run with an error naming the
// field, not with a flag error or a panic.
func (c Command) validate() error {
	switch {
	case c.Name == "":
		// Else the empty default of --leader-election-id is blamed.
		return fmt.Errorf("%w: %T.Name must not be empty", ErrInvalidConfig, c)
	case c.New == nil:
		return fmt.Errorf("%w: %T.New must not be empty", ErrInvalidConfig, c)
	case c.SetFlag == "" && len(c.Sets) > 0:
		return fmt.Errorf("%w: %T.Sets needs SetFlag, the flag that picks one", ErrInvalidConfig, c)
	case c.SetFlag == "":
		return nil
	case len(c.Sets) == 0:
		return fmt.Errorf("%w: %T.SetFlag %q needs Sets, the resource sets it picks from", ErrInvalidConfig, c, c.SetFlag)
	case strings.HasPrefix(c.SetFlag, "-") || strings.Contains(c.SetFlag, "="):
		// The flag package panics on such a name.
		return fmt.Errorf("%w: %T.SetFlag %q is not a flag name (no leading '-', no '=')", ErrInvalidConfig, c, c.SetFlag)
	}
	// The flag package panics on a flag defined twice.
	if planFlags(new(Options), new(FrameworkOptions), new(bool), "").Lookup(c.SetFlag) != nil {
		return fmt.Errorf("%w: %T.SetFlag %q is a flag of plan already", ErrInvalidConfig, c, c.SetFlag)
	}
	return nil
}

// planFlags returns the flags of the plan subcommand, all but the
// Command's SetFlag, bound to opts, fopts.Namespace and all; objects names
// the reconciled objects in their help.
func planFlags(opts *Options, fopts *FrameworkOptions, all *bool, objects string) *flag.FlagSet {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	opts.BindClientFlags(fs)
	fs.StringVar(&fopts.Namespace, "namespace", "", "namespace of the "+objects+" to plan (default: all namespaces)")
	fs.BoolVar(all, "all", false, "plan every one of the "+objects+" (in --namespace, or in all namespaces)")
	return fs
}

// operator resolves the cluster, runs Check and returns the Operator named
// name with the Framework New added.
func (c Command) operator(ctx context.Context, opts Options, fopts FrameworkOptions, name string, logger log.Logger) (*Operator, *framework.Framework, error) {
	if c.New == nil {
		return nil, nil, fmt.Errorf("%w: %T.New must not be empty", ErrInvalidConfig, c)
	}
	restConfig, _, err := opts.RESTConfig()
	if err != nil {
		return nil, nil, err
	}
	restConfig.UserAgent = name
	if c.Check != nil {
		if err := c.Check(ctx, restConfig, opts, fopts); err != nil {
			return nil, nil, err
		}
	}
	config := opts.Config(name, restConfig, logger)
	if config.Sharding != nil {
		config.Sharding.Resources, config.Sharding.Children = c.ShardResources, c.ShardChildren
	}
	op, err := New(config)
	if err != nil {
		return nil, nil, err
	}
	f, err := c.New(op, fopts, logger)
	if err != nil {
		return nil, nil, err
	}
	return op, f, nil
}

func (c Command) runPlan(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name, objects := c.Name+" plan", c.Objects
	if objects == "" {
		objects = "objects"
	}
	var opts Options
	fopts := FrameworkOptions{DryRun: true}
	var set string
	var all bool
	fs := planFlags(&opts, &fopts, &all, objects)
	fs.Init(name, flag.ContinueOnError)
	values := strings.Join(slices.Sorted(maps.Keys(c.Sets)), " or ")
	if c.SetFlag != "" {
		fs.StringVar(&set, c.SetFlag, "", fmt.Sprintf("plan under this %s (%s) instead of the one each object is routed to", c.SetFlag, values))
	}
	usage := fmt.Sprintf("usage: %s [flags] (namespace/name... | --all)\n\nPrints, for each of the %s, the create, update and delete changes the operator\nwould make now, computed by its own code from its caches. Changes nothing.\nName cluster-scoped %s, or %s in --namespace, by name alone. Flags:", name, objects, objects, objects)
	if err := ParseFlags(fs, args, usage, stdout); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return fail(stderr, name, 2, err)
	}
	keys := slices.Clone(fs.Args())
	var plain []string // names alone: cluster-scoped objects, or a mistake
	for i, k := range keys {
		ns, n, ok := strings.Cut(k, "/")
		switch {
		case !ok && k != "" && fopts.Namespace != "":
			keys[i] = fopts.Namespace + "/" + k
			continue
		case !ok && k != "":
			plain = append(plain, k)
			continue
		case !ok || ns == "" || n == "" || strings.Contains(n, "/"):
			return fail(stderr, name, 2, fmt.Errorf("invalid argument %q: want namespace/name, or name for cluster-scoped %s", k, objects))
		}
		if fopts.Namespace != "" && ns != fopts.Namespace {
			// The caches hold --namespace only: it would be "not found".
			return fail(stderr, name, 2, fmt.Errorf("invalid argument %q: not in --namespace %s", k, fopts.Namespace))
		}
	}
	switch err := errors.Join(opts.Validate(), fopts.validateNamespace()); {
	case err != nil:
		return fail(stderr, name, 2, err)
	case set != "" && c.Sets[set] == "":
		return fail(stderr, name, 2, fmt.Errorf("invalid value %q for flag -%s: want %s", set, c.SetFlag, values))
	case all == (len(keys) > 0):
		return fail(stderr, name, 2, fmt.Errorf("name the %s to plan (namespace/name...) or pass --all, not both", objects))
	}
	logger, _ := opts.NewLogger(stderr)
	defer RedirectKlog(logger)()
	op, f, err := c.operator(ctx, opts, fopts, c.Name+"-plan", logger)
	if err != nil {
		return fail(stderr, name, 1, err)
	}
	if len(plain) > 0 {
		switch namespaced, err := namespacedObjects(op, f); {
		case err != nil:
			return fail(stderr, name, 1, err)
		case namespaced:
			return fail(stderr, name, 2, fmt.Errorf("invalid argument %q: %s are namespaced: want namespace/name, or --namespace", plain[0], objects))
		}
	}
	plans, err := op.Plan(ctx, PlanConfig{Framework: f, Keys: keys, ResourceSet: c.Sets[set]})
	var b strings.Builder
	changes, waiting := 0, 0
	for _, p := range plans {
		p.Format(&b)
		b.WriteString("\n")
		if p.Changes() {
			changes++
		}
		if _, _, ok := p.Waits(); ok {
			waiting++
		}
		if err == nil && p.Err != nil && !retry.IsPermanent(p.Err) && !errors.Is(p.Err, framework.ErrNoResourceSet) {
			err = fmt.Errorf("plan %s: %w", p.Object, p.Err)
		}
	}
	fmt.Fprintf(&b, "%d %s planned, %d to change", len(plans), objects, changes)
	if waiting > 0 {
		fmt.Fprintf(&b, ", %d waiting", waiting)
	}
	b.WriteString("; nothing was changed\n")
	_, _ = io.WriteString(stdout, b.String())
	if err != nil {
		return fail(stderr, name, 1, err)
	}
	return 0
}

// namespacedObjects reports whether the objects of f's informer are
// namespaced, as the API server's discovery says. An informer that does
// not tell its resource (no GVR method, as SharedInformer has) is taken
// for cluster-scoped: a name alone is then looked up as given.
func namespacedObjects(op *Operator, f *framework.Framework) (bool, error) {
	inf, ok := f.Informer().(interface {
		GVR() schema.GroupVersionResource
	})
	if !ok {
		return false, nil
	}
	gvr := inf.GVR()
	r, err := servedResource(op.Kubernetes().Discovery(), gvr)
	switch {
	case err != nil:
		return false, fmt.Errorf("discover the resources of %s: %w", gvr.GroupVersion(), err)
	case r == nil:
		return false, fmt.Errorf("the API server does not serve %s", gvr.GroupResource())
	}
	return r.Namespaced, nil
}

// lockedWriter serializes the writes to w, and drops them once closed.
type lockedWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return len(p), nil // dropped: the caller has w back
	}
	return l.w.Write(p)
}

// close makes the writes that follow it, and none before, dropped.
func (l *lockedWriter) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
}

// fail writes "<name>: <err>" on one line to w and returns code.
func fail(w io.Writer, name string, code int, err error) int {
	fmt.Fprintf(w, "%s: %s\n", name, oneLine(err))
	return code
}
