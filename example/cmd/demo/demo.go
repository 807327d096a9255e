package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/operatorkit/operatorkit/crdclient"
	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/example/internal/cli"
	"github.com/operatorkit/operatorkit/example/webapp"
	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/requestcount"
	"github.com/operatorkit/operatorkit/testenv"
)

// demo is one run of the demo.
type demo struct {
	opts options
	out  io.Writer
	tty  bool

	kube    kubernetes.Interface // the demo's own clients (not counted)
	dyn     dynamic.Interface
	reg     *prometheus.Registry
	counter *requestcount.Counter // the operator's requests

	names     []string // every WebApp created
	release2  map[string]bool
	deleted   map[string]bool
	phases    []phaseTime
	converged int // objects seen converged at the end
	gone      int // deleted objects seen gone with their children
	leftovers int // children of deleted objects still there
}

type phaseTime struct {
	name string
	d    time.Duration
}

func (d *demo) printf(format string, args ...any) { fmt.Fprintf(d.out, format, args...) }

// phase runs f as a numbered step, printing its title and duration.
func (d *demo) phase(n int, title string, f func() error) error {
	d.printf("[%d/6] %s ...", n, title)
	start := time.Now()
	err := f()
	took := time.Since(start)
	d.phases = append(d.phases, phaseTime{name: title, d: took})
	if err != nil {
		d.printf(" failed (%s)\n", took.Round(time.Millisecond))
		return err
	}
	d.printf(" ok (%s)\n", took.Round(time.Millisecond))
	return nil
}

func (d *demo) run(ctx context.Context) (err error) {
	if d.opts.cluster == "" {
		// The first build of the API server program (minutes, once per
		// Kubernetes and Go version; it says what it does) is not part of
		// --timeout: it is in the cache when the demo starts it below.
		if _, err := testenv.Build(ctx, nil); err != nil {
			return err
		}
	}
	start := time.Now()
	held := ctx // --hold waits for this one (Ctrl-C), not for --timeout
	ctx, cancel := context.WithTimeoutCause(ctx, d.opts.timeout, fmt.Errorf("the demo did not finish within --timeout %s", d.opts.timeout))
	defer cancel()

	logFile, err := os.OpenFile(d.opts.logFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("open log file: %w", err)
	}
	defer logFile.Close()
	logger, _ := operator.NewLogger(logFile, d.opts.logLevel, "logfmt")
	// client-go logs through klog (reflectors, and the watches an
	// interrupt closes): into the log file too, as the operator's Command
	// does, not to the terminal in klog's format. Before any client is made
	// (RedirectKlog's first call), and restored last, once every client
	// has stopped.
	defer operator.RedirectKlog(logger)()

	d.reg = prometheus.NewRegistry()
	d.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	srv, err := cli.Listen(d.opts.metricsAddress)
	if err != nil {
		return err
	}
	var debug delegatingHandler
	srvCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	var srvWG sync.WaitGroup
	srvWG.Go(func() { _ = srv.Serve(srvCtx, d.reg, nil, &debug) })
	defer func() { stopServer(); srvWG.Wait() }()

	d.printf("operatorkit demo: the WebApp operator against a real kube-apiserver\n")
	d.printf("  metrics:      %s/metrics (also /healthz, /debug/reconciliations)\n", srv.URL())
	d.printf("  operator log: %s\n", d.opts.logFile)

	var clusterCfg *rest.Config
	if d.opts.cluster != "" {
		// An existing cluster: the demo starts no API server.
		if err := d.phase(1, "connecting to the cluster of "+d.opts.cluster, func() error {
			clusterCfg, err = clientcmd.BuildConfigFromFlags("", d.opts.cluster)
			return err
		}); err != nil {
			return fmt.Errorf("load --cluster kubeconfig: %w", err)
		}
		d.opts.kubeconfig = d.opts.cluster
	} else {
		var env *testenv.Env
		if err := d.phase(1, "starting etcd and kube-apiserver", func() error {
			env, err = testenv.Start(ctx, testenv.Options{LogOutput: logFile})
			return err
		}); err != nil {
			return fmt.Errorf("start the API server: %w", err)
		}
		defer env.Stop()
		if err := env.WriteKubeconfig(d.opts.kubeconfig); err != nil {
			return err
		}
		clusterCfg = env.Config()
	}
	d.printf("  kubeconfig:   %s\n", d.opts.kubeconfig)
	d.printf("                kubectl --kubeconfig %s get webapps -n %s\n", d.opts.kubeconfig, d.opts.namespace)

	adminCfg := rest.CopyConfig(clusterCfg)
	adminCfg.QPS, adminCfg.Burst = -1, 0 // the demo's own checks are not rate limited
	if d.kube, err = kubernetes.NewForConfig(adminCfg); err != nil {
		return err
	}
	if d.dyn, err = dynamic.NewForConfig(adminCfg); err != nil {
		return err
	}

	if err := d.phase(2, "installing the WebApp CRD with crdclient", func() error {
		return installCRD(ctx, adminCfg, logger)
	}); err != nil {
		return err
	}

	// The operator's clients go through a request counter.
	d.counter = requestcount.New()
	d.reg.MustRegister(d.counter.Collector())
	opCfg := d.counter.Wrap(clusterCfg)
	opCfg.QPS, opCfg.Burst = 500, 1000
	opCfg.UserAgent = "webapp-operator-demo"
	rt, op, err := newOperator(opCfg, d.opts, logger, d.reg)
	if err != nil {
		return err
	}
	debug.set(op.DebugHandler())
	opCtx, stopOperator := context.WithCancel(context.WithoutCancel(ctx))
	opDone := make(chan error, 1)
	go func() { opDone <- rt.Run(opCtx) }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		stopOperator()
		return <-opDone
	}
	defer stop()
	if err := d.phase(3, fmt.Sprintf("starting the operator (%d workers)", d.opts.workers), func() error {
		select {
		case <-op.Booted():
			return nil
		case err := <-opDone:
			stopped = true
			return fmt.Errorf("operator stopped: %v", err)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}); err != nil {
		return err
	}

	// An existing namespace (a second run against the same cluster) is
	// used as it is.
	if _, err := d.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: d.opts.namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", d.opts.namespace, err)
	}
	cleaned := false
	cleanUp := func() {
		if d.opts.cluster != "" && !cleaned {
			// Not the demo's own API server: leave the cluster as it
			// was, so that a second run into the same namespace starts
			// from nothing; also when a phase failed. Before the
			// operator stops (deferred after stop), which processes the
			// deletes.
			cleaned = true
			d.cleanUp(ctx)
		}
	}
	defer cleanUp()
	if err := d.phase(4, fmt.Sprintf("creating %d WebApps in namespace %s (release 1) and waiting until they converge", d.opts.objects, d.opts.namespace), func() error {
		if err := d.createAll(ctx); err != nil {
			return err
		}
		return d.await(ctx, "converged")
	}); err != nil {
		return err
	}
	if err := d.phase(5, fmt.Sprintf("moving %d WebApps to release 2 and waiting for their Services", d.opts.objects/2), func() error {
		if err := d.moveToRelease2(ctx); err != nil {
			return err
		}
		return d.await(ctx, fmt.Sprintf("%d on release 2", d.opts.objects/2))
	}); err != nil {
		return err
	}
	if err := d.phase(6, fmt.Sprintf("deleting %d WebApps and waiting until their children are gone", d.opts.objects/4), func() error {
		if err := d.deleteQuarter(ctx); err != nil {
			return err
		}
		return d.await(ctx, fmt.Sprintf("%d deleted", d.opts.objects/4))
	}); err != nil {
		return err
	}
	wall := time.Since(start)

	if err := d.summary(wall); err != nil {
		return err
	}
	if d.opts.hold {
		d.printf("\nholding: the API server and the operator keep running; try\n")
		d.printf("  kubectl --kubeconfig %s get webapps,deployments,services -n %s\n", d.opts.kubeconfig, d.opts.namespace)
		d.printf("  curl -s '%s/debug/reconciliations?format=text'\n", srv.URL())
		d.printf("press Ctrl-C to stop\n")
		<-held.Done()
		d.printf("\nstopping\n")
	}
	cleanUp()
	if err := stop(); err != nil {
		return fmt.Errorf("operator stopped with an error: %w", err)
	}
	return nil
}

// cleanUp deletes the WebApps the demo created and left (--cluster), while
// the operator still runs to process their deletes, and waits up to a
// minute until they are gone. It prints what it did or why it could not:
// the demo's result stands either way. The namespace is kept (it may be
// the user's, and a cluster without a namespace controller would keep it
// Terminating).
func (d *demo) cleanUp(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	d.printf("\ncleaning up: deleting the demo's WebApps in namespace %s ...", d.opts.namespace)
	start := time.Now()
	wr := d.dyn.Resource(v1alpha1.GroupVersionResource).Namespace(d.opts.namespace)
	err := parallel(ctx, 8, len(d.names), func(ctx context.Context, i int) error {
		if err := wr.Delete(ctx, d.names[i], metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete webapp %s: %w", d.names[i], err)
		}
		return nil
	})
	left := len(d.names)
	if err == nil {
		err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			l, err := wr.List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			left = 0
			for _, u := range l.Items {
				if slices.Contains(d.names, u.GetName()) {
					left++
				}
			}
			return left == 0, nil
		})
	}
	if err != nil {
		d.printf(" not done: %s\n", oneLine(err))
		d.printf("  %d WebApps left; delete them with: kubectl --kubeconfig %s delete webapps -n %s --all\n", left, d.opts.kubeconfig, d.opts.namespace)
		return
	}
	d.printf(" ok, %d gone (%s)\n", len(d.names), time.Since(start).Round(time.Millisecond))
}

// installCRD ensures the WebApp CRD with crdclient, as an operator does.
func installCRD(ctx context.Context, cfg *rest.Config, logger log.Logger) error {
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	c, err := crdclient.New(crdclient.Config{Client: ext, Logger: logger})
	if err != nil {
		return err
	}
	crd, err := v1alpha1.CRD()
	if err != nil {
		return err
	}
	return c.EnsureCreated(ctx, crd, nil)
}

// newOperator builds the operator with the demo's settings: the same
// packages as webapp-operator, with the demo's own HTTP server (the
// operator's is off) and registry.
func newOperator(cfg *rest.Config, o options, logger log.Logger, reg *prometheus.Registry) (*operator.Operator, *webapp.Operator, error) {
	rt, err := operator.New(operator.Config{RESTConfig: cfg, Name: webapp.DefaultName, Logger: logger, Registry: reg})
	if err != nil {
		return nil, nil, err
	}
	op, err := webapp.New(webapp.Config{Operator: rt, Options: operator.FrameworkOptions{Namespace: o.namespace, Workers: o.workers}, Logger: logger})
	return rt, op, err
}

// webAppName returns the name of the i-th WebApp.
func webAppName(i int) string { return fmt.Sprintf("web-%03d", i) }

// spec returns the spec of the i-th WebApp.
func (d *demo) spec(i int) v1alpha1.WebAppSpec {
	n := int32(i%3 + 1)
	return v1alpha1.WebAppSpec{
		Image:    d.opts.image,
		Replicas: &n,
		Content:  fmt.Sprintf("<h1>WebApp %d</h1>\n<p>served by the operatorkit demo</p>\n", i),
	}
}

// createAll creates the WebApps, eight at a time.
func (d *demo) createAll(ctx context.Context) error {
	d.names = make([]string, d.opts.objects)
	for i := range d.names {
		d.names[i] = webAppName(i)
	}
	return parallel(ctx, 8, d.opts.objects, func(ctx context.Context, i int) error {
		w := &v1alpha1.WebApp{
			ObjectMeta: metav1.ObjectMeta{Name: d.names[i], Namespace: d.opts.namespace},
			Spec:       d.spec(i),
		}
		u, err := v1alpha1.ToUnstructured(w)
		if err != nil {
			return err
		}
		_, err = d.dyn.Resource(v1alpha1.GroupVersionResource).Namespace(d.opts.namespace).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create webapp %s: %w", d.names[i], err)
		}
		return nil
	})
}

// moveToRelease2 labels every other WebApp with release "2".
func (d *demo) moveToRelease2(ctx context.Context) error {
	d.release2 = map[string]bool{}
	var idx []int
	for i := 0; i < d.opts.objects && len(idx) < d.opts.objects/2; i += 2 {
		idx = append(idx, i)
		d.release2[d.names[i]] = true
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, webapp.LabelRelease, webapp.Release2)
	return parallel(ctx, 8, len(idx), func(ctx context.Context, j int) error {
		name := d.names[idx[j]]
		_, err := d.dyn.Resource(v1alpha1.GroupVersionResource).Namespace(d.opts.namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("label webapp %s: %w", name, err)
		}
		return nil
	})
}

// deleteQuarter deletes every fourth WebApp (half of them on release 2).
func (d *demo) deleteQuarter(ctx context.Context) error {
	d.deleted = map[string]bool{}
	var names []string
	for i := 0; i < d.opts.objects && len(names) < d.opts.objects/4; i += 4 {
		names = append(names, d.names[i], d.names[i+1])
	}
	names = names[:d.opts.objects/4]
	for _, n := range names {
		d.deleted[n] = true
	}
	return parallel(ctx, 8, len(names), func(ctx context.Context, j int) error {
		err := d.dyn.Resource(v1alpha1.GroupVersionResource).Namespace(d.opts.namespace).Delete(ctx, names[j], metav1.DeleteOptions{})
		if err != nil {
			return fmt.Errorf("delete webapp %s: %w", names[j], err)
		}
		return nil
	})
}

// parallel runs f for 0..n-1 with at most width at once, and returns the
// first error.
func parallel(ctx context.Context, width, n int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return context.Cause(ctx)
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(ctx, i); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
