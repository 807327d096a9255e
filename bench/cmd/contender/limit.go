package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/operatorkit/operatorkit/bench/internal/item"
)

// limit is the floor: plain client-go doing only the writes that are
// necessary.
//
//   - managedFields are dropped before objects are cached, as in the other
//     contenders.
//   - Typed Items through a REST client, typed ConfigMaps through the
//     clientset; both informers restricted to the namespace.
//   - Item events enqueue only on create, generation change or deletion
//     start; ConfigMap events only when a ConfigMap is deleted or its data no
//     longer matches its Item (never for the contender's own writes).
//   - The objects its writes return go into a client-go MutationCache in
//     front of each informer's store, so a reconcile never acts on a version
//     older than its own last write (no 409 and no AlreadyExists from a
//     stale cache).
//   - Finalizer patches carry a resourceVersion precondition (they replace
//     the list); the status patch does not: it only ever sets the
//     generation this reconcile observed, which is correct even when a newer
//     generation exists, so it never needs to fail.
//
// With readyCond (the limit-ready contender) it also keeps a Ready condition
// as the Framework's Config.Conditions writes it after a success (type,
// status, reason, message, the observed generation; the transition time
// kept while it stays True), in the same merge patch as
// status.observedGeneration: the least a client-go operator does that
// reports what operatorkit's documented path reports. The merge patch
// replaces the whole list, which is right only because no other writer
// sets conditions on Items.
type limit struct {
	ns        string
	workers   int
	finalizer string
	readyCond bool

	items     rest.Interface
	kube      kubernetes.Interface
	itemInf   cache.SharedIndexInformer
	cmInf     cache.SharedIndexInformer
	itemCache cache.MutationCache
	cmCache   cache.MutationCache
	queue     workqueue.TypedRateLimitingInterface[string]

	ready      atomic.Bool
	reconciles atomic.Int64
}

const limitFinalizer = "bench.operatorkit.io/limit"

func newLimit(cfg *rest.Config, ns string, workers int, readyCond bool) (*limit, error) {
	items, err := item.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube client: %w", err)
	}
	l := &limit{ns: ns, workers: workers, finalizer: limitFinalizer, readyCond: readyCond, items: items, kube: kube}
	l.itemInf = cache.NewSharedIndexInformer(
		cache.NewListWatchFromClient(items, item.Resource, ns, fields.Everything()),
		&item.Item{}, 0, cache.Indexers{})
	l.cmInf = informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns)).Core().V1().ConfigMaps().Informer()
	for _, inf := range []cache.SharedIndexInformer{l.itemInf, l.cmInf} {
		if err := inf.SetTransform(stripManagedFields); err != nil {
			return nil, err
		}
	}
	logger := klog.Background()
	l.itemCache = cache.NewIntegerResourceVersionMutationCacheWithOptions(logger, l.itemInf.GetStore(), cache.MutationCacheOptions{TTL: time.Minute, MaxCacheSize: 1 << 16})
	l.cmCache = cache.NewIntegerResourceVersionMutationCacheWithOptions(logger, l.cmInf.GetStore(), cache.MutationCacheOptions{TTL: time.Minute, MaxCacheSize: 1 << 16, IncludeAdds: true})
	l.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())

	if _, err := l.itemInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { l.enqueue(obj) },
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*item.Item), newObj.(*item.Item)
			l.itemCache.OnAddOrUpdate(n)
			if o.Generation != n.Generation || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) {
				l.enqueue(n)
			}
		},
		DeleteFunc: func(obj any) {
			if o, ok := obj.(runtime.Object); ok {
				l.itemCache.OnDelete(o)
			}
		},
	}); err != nil {
		return nil, err
	}
	if _, err := l.cmInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, newObj any) {
			cm := newObj.(*corev1.ConfigMap)
			l.cmCache.OnAddOrUpdate(cm)
			if it := l.owner(cm); it != nil && it.DeletionTimestamp == nil && !item.DataEqual(cm.Data, it.Spec) {
				l.queue.Add(ns + "/" + it.Name)
			}
		},
		DeleteFunc: func(obj any) {
			cm, ok := obj.(*corev1.ConfigMap)
			if !ok {
				if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					cm, _ = t.Obj.(*corev1.ConfigMap)
				}
			}
			if cm == nil {
				return
			}
			l.cmCache.OnDelete(cm)
			if it := l.owner(cm); it != nil && it.DeletionTimestamp == nil {
				l.queue.Add(ns + "/" + it.Name)
			}
		},
	}); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *limit) owner(cm *corev1.ConfigMap) *item.Item {
	name := cm.Labels[item.LabelItem]
	if name == "" {
		return nil
	}
	obj, ok, _ := l.itemCache.GetByKey(cm.Namespace + "/" + name)
	if !ok {
		return nil
	}
	return obj.(*item.Item)
}

func (l *limit) enqueue(obj any) {
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		l.queue.Add(key)
	}
}

func (l *limit) Ready() bool       { return l.ready.Load() }
func (l *limit) Reconciles() int64 { return l.reconciles.Load() }

func (l *limit) EnqueueAll() int {
	keys := l.itemInf.GetStore().ListKeys()
	for _, k := range keys {
		l.queue.Add(k)
	}
	return len(keys)
}

func (l *limit) Run(ctx context.Context) error {
	defer l.queue.ShutDown()
	go l.itemInf.RunWithContext(ctx)
	go l.cmInf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), l.itemInf.HasSynced, l.cmInf.HasSynced) {
		return ctx.Err()
	}
	var wg sync.WaitGroup
	for range l.workers {
		wg.Go(func() {
			for l.processNext(ctx) {
			}
		})
	}
	l.ready.Store(true)
	<-ctx.Done()
	l.queue.ShutDown()
	wg.Wait()
	return nil
}

func (l *limit) processNext(ctx context.Context) bool {
	key, quit := l.queue.Get()
	if quit {
		return false
	}
	defer l.queue.Done(key)
	l.reconciles.Add(1)
	if err := l.reconcile(ctx, key); err != nil {
		if ctx.Err() == nil {
			logf("limit: reconcile %s: %v", key, err)
		}
		l.queue.AddRateLimited(key)
		return true
	}
	l.queue.Forget(key)
	return true
}

func (l *limit) reconcile(ctx context.Context, key string) error {
	obj, ok, err := l.itemCache.GetByKey(key)
	if err != nil || !ok {
		return err
	}
	it := obj.(*item.Item)
	cmObj, cmExists, err := l.cmCache.GetByKey(key)
	if err != nil {
		return err
	}
	if it.DeletionTimestamp != nil {
		if !hasString(it.Finalizers, l.finalizer) {
			return nil
		}
		if cmExists {
			err := l.kube.CoreV1().ConfigMaps(l.ns).Delete(ctx, it.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete configmap: %w", err)
			}
			if err == nil {
				// Forget the deleted ConfigMap at once.
				l.cmCache.OnDelete(cmObj.(*corev1.ConfigMap))
			}
		}
		_, err := l.patchItem(ctx, it, finalizerPatch(it, removeString(it.Finalizers, l.finalizer)), "")
		return err
	}
	if !hasString(it.Finalizers, l.finalizer) {
		it, err = l.patchItem(ctx, it, finalizerPatch(it, append(append([]string(nil), it.Finalizers...), l.finalizer)), "")
		if err != nil {
			return err
		}
	}
	switch {
	case !cmExists:
		cm, err := l.kube.CoreV1().ConfigMaps(l.ns).Create(ctx, item.ConfigMap(it), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create configmap: %w", err)
		}
		l.cmCache.Mutation(cm)
	case !item.DataEqual(cmObj.(*corev1.ConfigMap).Data, it.Spec):
		cm := cmObj.(*corev1.ConfigMap).DeepCopy()
		cm.Data = item.Data(it.Spec)
		cm, err := l.kube.CoreV1().ConfigMaps(l.ns).Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update configmap: %w", err)
		}
		l.cmCache.Mutation(cm)
	}
	if l.readyCond {
		return l.writeReady(ctx, it)
	}
	if it.Status.ObservedGeneration != it.Generation {
		body := fmt.Appendf(nil, `{"status":{"observedGeneration":%d}}`, it.Generation)
		if _, err := l.patchItem(ctx, it, body, "status"); err != nil {
			return err
		}
	}
	return nil
}

// The Ready condition limit-ready writes: the Framework's after a success
// of the readme contender's resource set "v1".
const (
	limitReadyReason  = "ReconciliationSucceeded"
	limitReadyMessage = "reconciled by resource set v1"
)

// writeReady merge-patches status.observedGeneration and a Ready condition
// of the Item's generation, unless both are current.
func (l *limit) writeReady(ctx context.Context, it *item.Item) error {
	conds := slices.Clone(it.Status.Conditions) // the cached object stays as it is
	changed := meta.SetStatusCondition(&conds, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue,
		Reason: limitReadyReason, Message: limitReadyMessage, ObservedGeneration: it.Generation})
	if !changed && it.Status.ObservedGeneration == it.Generation {
		return nil
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{
		"observedGeneration": it.Generation, "conditions": conds}})
	if err != nil {
		return err
	}
	_, err = l.patchItem(ctx, it, body, "status")
	return err
}

// patchItem merge-patches it (or its subresource) and records the result in
// the mutation cache.
func (l *limit) patchItem(ctx context.Context, it *item.Item, body []byte, subresource string) (*item.Item, error) {
	out := &item.Item{}
	req := l.items.Patch(types.MergePatchType).Namespace(it.Namespace).Resource(item.Resource).Name(it.Name).Body(body)
	if subresource != "" {
		req = req.SubResource(subresource)
	}
	if err := req.Do(ctx).Into(out); err != nil {
		return nil, fmt.Errorf("patch item %s: %w", subresource, err)
	}
	l.itemCache.Mutation(out)
	return out, nil
}
