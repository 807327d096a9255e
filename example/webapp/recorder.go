package webapp

import (
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// deferredRecorder is a record.EventRecorder whose target is set later: the
// resources get it in New, while the event broadcaster (which starts a
// goroutine) is only created in Run. Events before that are dropped.
type deferredRecorder struct {
	target atomic.Pointer[record.EventRecorder]
}

func (d *deferredRecorder) set(r record.EventRecorder) { d.target.Store(&r) }

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
