package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// WatchErrorBuffer is the capacity of the error channel returned by
// Informer.Watch. Errors that do not fit are dropped (they are still logged
// and counted in operatorkit_informer_watch_errors_total).
const WatchErrorBuffer = 16

// Watch is the channel view of the informer, as in the original operatorkit:
//
//   - updateChan gets a watch.Added event for every object of the initial
//     list and every object added later, and a watch.Modified event for
//     every update, including resyncs (every Config.ResyncPeriod each cached
//     object comes again as Modified).
//   - deleteChan gets a watch.Deleted event for every deleted object. When
//     the informer missed the delete itself (a cache.DeletedFinalStateUnknown
//     tombstone), the event holds the last object the cache knew.
//   - errChan gets the errors that ended the informer's list or watch; the
//     informer retries by itself, so they are for logging. If the handler
//     cannot be registered (the informer has already stopped) errChan gets
//     that error and all three channels are closed at once.
//
// Event objects belong to the cache: never modify them.
//
// Back-pressure: updateChan and deleteChan are unbuffered and fed by one
// goroutine, so a consumer sees the events of both channels in the order the
// informer delivered them. While the consumer does not read, the pending
// events wait in the handler's own unbounded buffer inside client-go: the
// informer's list and watch, its cache and every other handler go on
// undisturbed, at the cost of memory for a consumer that falls far behind.
// errChan is buffered (WatchErrorBuffer) and never blocks the informer.
//
// When ctx ends, or the context given to Run ends, the handler is removed,
// events not yet received are dropped, and the three channels are closed
// (when ctx ends also if the informer never ran). A consumer that stops
// reading therefore never keeps Run from returning. Watch may be called
// before or after Run, any number of times; each call gets its own channels
// and, when called after Run started, an Added event for every cached
// object first.
func (i *Informer) Watch(ctx context.Context) (deleteChan, updateChan <-chan watch.Event, errChan <-chan error) {
	w := &watcher{
		ctx:      ctx,
		stopping: i.stopping,
		logger:   i.logger,
		deletes:  make(chan watch.Event),
		updates:  make(chan watch.Event),
		errs:     make(chan error, WatchErrorBuffer),
	}
	remove := func() {
		i.mu.Lock()
		delete(i.watchers, w)
		i.mu.Unlock()
		w.close()
	}
	fail := func(err error) (<-chan watch.Event, <-chan watch.Event, <-chan error) {
		w.sendError(fmt.Errorf("watch informer %s: %w", i.name, err))
		remove()
		return w.deletes, w.updates, w.errs
	}

	i.mu.Lock()
	select {
	case <-i.stopping:
		i.mu.Unlock()
		return fail(errors.New("informer has stopped"))
	default:
	}
	i.watchers[w] = struct{}{}
	i.watchGoroutines.Add(1)
	i.mu.Unlock()

	reg, err := i.informer.AddEventHandler(w)
	if err != nil {
		i.watchGoroutines.Done()
		return fail(err)
	}
	go func() {
		defer i.watchGoroutines.Done()
		select {
		case <-ctx.Done():
		case <-i.stopping:
		}
		// Stop queueing new events first; then close, once every
		// in-flight send has seen ctx or the informer end.
		_ = i.informer.RemoveEventHandler(reg)
		remove()
	}()
	return w.deletes, w.updates, w.errs
}

// watcher is the event handler behind one Watch call.
type watcher struct {
	ctx      context.Context
	stopping <-chan struct{} // closed when the informer's Run context ends
	logger   log.Logger

	// mu is held for reading while sending and for writing while closing,
	// so that no send ever hits a closed channel.
	mu      sync.RWMutex
	closed  bool
	deletes chan watch.Event
	updates chan watch.Event
	errs    chan error
}

func (w *watcher) OnAdd(obj any, _ bool)  { w.send(w.updates, watch.Added, obj) }
func (w *watcher) OnUpdate(_, newObj any) { w.send(w.updates, watch.Modified, newObj) }
func (w *watcher) OnDelete(obj any)       { w.send(w.deletes, watch.Deleted, obj) }

// sendError passes err on to errChan without blocking; it is dropped when
// the buffer is full or the channels are closed.
func (w *watcher) sendError(err error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return
	}
	select {
	case w.errs <- err:
	default:
	}
}

// send delivers one event, blocking until the consumer takes it, ctx ends
// or the informer stops.
func (w *watcher) send(ch chan watch.Event, typ watch.EventType, obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	o, ok := obj.(runtime.Object)
	if !ok {
		level.Error(w.logger).Log("msg", "dropping event: object is not a runtime.Object", "event", string(typ), "type", fmt.Sprintf("%T", obj))
		return
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return
	}
	select {
	case ch <- watch.Event{Type: typ, Object: o}:
	case <-w.ctx.Done():
	case <-w.stopping:
	}
}

// close closes the channels once no send is in flight. It is idempotent.
func (w *watcher) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	close(w.deletes)
	close(w.updates)
	close(w.errs)
}
