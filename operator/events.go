package operator

import (
	"context"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	clientrecord "k8s.io/client-go/tools/record"
)

// EventRecorder returns a recorder of Events about objects of the types in
// scheme (client-go's scheme plus the operator's own types), with the
// source component Config.Name. Give it to the Frameworks and resources
// (framework.Config.EventRecorder). Run starts client-go's event
// broadcaster, which aggregates and rate-limits Events per object, before it
// boots the Frameworks, and shuts it down after they stopped: Events
// recorded before Run or after it are dropped, and no goroutine runs for it
// outside Run. Calls with different schemes return recorders that share one
// broadcaster.
func (o *Operator) EventRecorder(scheme *runtime.Scheme) clientrecord.EventRecorder {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := &deferredRecorder{scheme: scheme, component: o.config.Name}
	o.recorders = append(o.recorders, r)
	return r
}

// startEvents starts the broadcaster for the recorders handed out, if any,
// and returns the func that shuts it down.
func (o *Operator) startEvents(ctx context.Context) (stop func()) {
	o.mu.Lock()
	recorders := append([]*deferredRecorder(nil), o.recorders...)
	o.mu.Unlock()
	if len(recorders) == 0 {
		return func() {}
	}
	b := clientrecord.NewBroadcaster(clientrecord.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: o.kube.CoreV1().Events("")})
	for _, r := range recorders {
		r.set(b.NewRecorder(r.scheme, corev1.EventSource{Component: r.component}))
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for _, r := range recorders {
				r.target.Store(nil)
			}
			b.Shutdown()
		})
	}
}

// deferredRecorder forwards to the recorder Run sets, and drops Events
// while there is none.
type deferredRecorder struct {
	scheme    *runtime.Scheme
	component string
	target    atomic.Pointer[clientrecord.EventRecorder]
}

func (d *deferredRecorder) set(r clientrecord.EventRecorder) { d.target.Store(&r) }

func (d *deferredRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	if r := d.target.Load(); r != nil {
		(*r).Event(obj, eventtype, reason, message)
	}
}

func (d *deferredRecorder) Eventf(obj runtime.Object, eventtype, reason, format string, args ...any) {
	if r := d.target.Load(); r != nil {
		(*r).Eventf(obj, eventtype, reason, format, args...)
	}
}

func (d *deferredRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, format string, args ...any) {
	if r := d.target.Load(); r != nil {
		(*r).AnnotatedEventf(obj, annotations, eventtype, reason, format, args...)
	}
}
