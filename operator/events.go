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
// (framework.Config.EventRecorder). Events go through client-go's event
// broadcaster, which aggregates and rate-limits them per object. Run starts
// it when the first Event is recorded (an operator whose objects are all
// well records none, and runs no broadcaster and keeps no event queue), and
// shuts it down after the Frameworks stopped: Events recorded before Run or
// after it are dropped, and no goroutine runs for it outside Run. A
// recorder asked for while Run runs records from then on. Calls with
// different schemes return recorders that share one broadcaster.
func (o *Operator) EventRecorder(scheme *runtime.Scheme) clientrecord.EventRecorder {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := &deferredRecorder{scheme: scheme, component: o.config.Name}
	o.recorders = append(o.recorders, r)
	if o.events != nil {
		o.events.add(r)
	}
	return r
}

// startEvents makes the recorders handed out, if any, start the
// broadcaster with their first Event, and returns the func that shuts it
// down (if it started) and drops later Events.
func (o *Operator) startEvents(ctx context.Context) (stop func()) {
	s := &eventSink{ctx: ctx, events: o.kube.CoreV1().Events("")}
	o.mu.Lock()
	for _, r := range o.recorders {
		s.add(r)
	}
	o.events = s
	o.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			o.mu.Lock()
			o.events = nil
			o.mu.Unlock()
			s.stop()
		})
	}
}

// eventSink is the broadcaster of one Run, made by the first Event.
type eventSink struct {
	ctx       context.Context
	events    typedcorev1.EventInterface
	recorders []*deferredRecorder

	mu      sync.Mutex
	b       clientrecord.EventBroadcaster // nil until the first Event
	stopped bool
}

// add makes r record through s: at once when the broadcaster runs, else
// from the first Event on. A stopped s drops r's Events.
func (s *eventSink) add(r *deferredRecorder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.recorders = append(s.recorders, r)
	r.sink.Store(s)
	if s.b != nil {
		r.set(s.b.NewRecorder(r.scheme, corev1.EventSource{Component: r.component}))
	}
}

// start starts the broadcaster and gives every recorder its recorder,
// unless that happened already or the sink is stopped.
func (s *eventSink) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b != nil || s.stopped {
		return
	}
	s.b = clientrecord.NewBroadcaster(clientrecord.WithContext(s.ctx))
	s.b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.events})
	for _, r := range s.recorders {
		r.set(s.b.NewRecorder(r.scheme, corev1.EventSource{Component: r.component}))
	}
}

func (s *eventSink) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for _, r := range s.recorders {
		r.sink.Store(nil)
		r.target.Store(nil)
	}
	if s.b != nil {
		s.b.Shutdown()
	}
}

// deferredRecorder forwards to the recorder of the running broadcaster, and
// drops Events while there is none.
type deferredRecorder struct {
	scheme    *runtime.Scheme
	component string
	target    atomic.Pointer[clientrecord.EventRecorder]
	// sink, set while Run runs, starts the broadcaster with the first
	// Event.
	sink atomic.Pointer[eventSink]
}

func (d *deferredRecorder) set(r clientrecord.EventRecorder) { d.target.Store(&r) }

// recorder returns the recorder to forward to, starting the broadcaster if
// this is the first Event of the Run; nil outside Run.
func (d *deferredRecorder) recorder() clientrecord.EventRecorder {
	if r := d.target.Load(); r != nil {
		return *r
	}
	if s := d.sink.Load(); s != nil {
		s.start()
		if r := d.target.Load(); r != nil {
			return *r
		}
	}
	return nil
}

func (d *deferredRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	if r := d.recorder(); r != nil {
		r.Event(obj, eventtype, reason, message)
	}
}

func (d *deferredRecorder) Eventf(obj runtime.Object, eventtype, reason, format string, args ...any) {
	if r := d.recorder(); r != nil {
		r.Eventf(obj, eventtype, reason, format, args...)
	}
}

func (d *deferredRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, format string, args ...any) {
	if r := d.recorder(); r != nil {
		r.AnnotatedEventf(obj, annotations, eventtype, reason, format, args...)
	}
}
