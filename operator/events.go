package operator

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
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
// shuts it down after the Frameworks stopped, giving the Events recorded
// until then, queued or in flight, up to 2 seconds to be written (retried
// as client-go retries them) before it ends their requests:
// Events recorded before Run or after it are dropped, and no goroutine
// runs for it outside Run, even when the API server does not answer. A
// recorder asked for while Run runs records from then on. Calls with
// different schemes return recorders that share one broadcaster. A nil
// scheme is client-go's (k8s.io/client-go/kubernetes/scheme.Scheme).
func (o *Operator) EventRecorder(scheme *runtime.Scheme) clientrecord.EventRecorder {
	if scheme == nil {
		// client-go's recorder would drop every Event about an object
		// without apiVersion and kind, as a clientset's are.
		scheme = clientgoscheme.Scheme
	}
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
	writeCtx, endWrites := context.WithCancel(ctx)
	s := &eventSink{ctx: ctx, events: o.kube.CoreV1().Events(""), writeCtx: writeCtx, endWrites: endWrites}
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

// eventFlushTimeout is how long the shutdown of the event broadcaster
// waits for the writes of Events in flight before it ends their requests.
const eventFlushTimeout = 2 * time.Second

// eventSink is the broadcaster of one Run, made by the first Event.
type eventSink struct {
	ctx       context.Context
	events    typedcorev1.EventInterface
	recorders []*deferredRecorder
	// writeCtx is the context of the Events' writes; endWrites ends it
	// when the broadcaster is shut down, so that a write the API server
	// does not answer does not hold the broadcaster's goroutine past Run.
	writeCtx  context.Context
	endWrites context.CancelFunc

	mu      sync.Mutex
	b       clientrecord.EventBroadcaster // nil until the first Event
	stopped bool
	// flushed, made by stop, is closed (and set to nil) when the sink is
	// handed stop's marker Event: every Event before it was written or
	// given up.
	flushed chan struct{}

	// writing counts the writes in flight; idle, when not nil, is closed
	// when it drops to zero.
	wmu     sync.Mutex
	writing int
	idle    chan struct{}
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
	s.b.StartRecordingToSink(sinkWithContext{s})
	for _, r := range s.recorders {
		r.set(s.b.NewRecorder(r.scheme, corev1.EventSource{Component: r.component}))
	}
}

// stop shuts the broadcaster down: its goroutine gets up to
// eventFlushTimeout to write the Events queued and in flight, and then
// their requests are ended. client-go's Shutdown alone would drop the
// Events queued: it ends the context that its goroutine selects on beside
// the queue. So a marker Event is queued after the last one, and Shutdown
// waits until the goroutine, which writes one Event after the other,
// handed the marker to the sink.
func (s *eventSink) stop() {
	s.mu.Lock()
	s.stopped = true
	for _, r := range s.recorders {
		r.sink.Store(nil)
		r.target.Store(nil)
	}
	b := s.b
	flushed := make(chan struct{})
	s.flushed = flushed
	s.mu.Unlock()
	if b != nil {
		b.NewRecorder(runtime.NewScheme(), corev1.EventSource{Component: flushMarker.Name}).
			Event(flushMarker, corev1.EventTypeNormal, "Flush", "the Events before this one were handled")
		t := time.NewTimer(eventFlushTimeout)
		select {
		case <-flushed:
		case <-t.C:
		}
		t.Stop()
		b.Shutdown()
	}
	s.endWrites()
	<-s.idleWrites() // ended with their context
}

// flushMarker is the object of the Event that stop queues after the last
// one; the sink writes no Event about it.
var flushMarker = &corev1.ObjectReference{Kind: "OperatorkitEventFlush", Name: "operatorkit-event-flush", UID: "operatorkit-event-flush"}

// marker tells whether e is stop's marker Event, and if so tells stop.
func (s *eventSink) marker(e *corev1.Event) bool {
	if e.InvolvedObject.UID != flushMarker.UID {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.flushed != nil {
		close(s.flushed)
		s.flushed = nil
	}
	return true
}

// begin counts a write in flight until the func returned is called.
func (s *eventSink) begin() (end func()) {
	s.wmu.Lock()
	s.writing++
	s.wmu.Unlock()
	return func() {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		if s.writing--; s.writing == 0 && s.idle != nil {
			close(s.idle)
			s.idle = nil
		}
	}
}

// idleWrites returns a channel closed once no write is in flight.
func (s *eventSink) idleWrites() <-chan struct{} {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.writing == 0 {
		done := make(chan struct{})
		close(done)
		return done
	}
	if s.idle == nil {
		s.idle = make(chan struct{})
	}
	return s.idle
}

// sinkWithContext writes the broadcaster's Events with the sink's
// writeCtx, counting them in flight, all but stop's marker.
type sinkWithContext struct{ s *eventSink }

func (k sinkWithContext) Create(e *corev1.Event) (*corev1.Event, error) {
	if k.s.marker(e) {
		return e, nil
	}
	defer k.s.begin()()
	return k.s.events.CreateWithEventNamespaceWithContext(k.s.writeCtx, e)
}

func (k sinkWithContext) Update(e *corev1.Event) (*corev1.Event, error) {
	if k.s.marker(e) {
		return e, nil
	}
	defer k.s.begin()()
	return k.s.events.UpdateWithEventNamespaceWithContext(k.s.writeCtx, e)
}

func (k sinkWithContext) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	if k.s.marker(e) {
		return e, nil
	}
	defer k.s.begin()()
	return k.s.events.PatchWithEventNamespaceWithContext(k.s.writeCtx, e, data)
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
