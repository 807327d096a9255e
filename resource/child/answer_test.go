package child_test

import (
	"context"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/resource/crud"
)

// handCache is a child.Cache over a store the test keeps and an informer
// that only takes an event handler, synced at once: the test plays the
// informer, changing the store and then calling the handler, at the
// moments it chooses.
type handCache struct {
	store map[string]*corev1.ConfigMap
	inf   handInformer
}

type handInformer struct {
	cache.SharedIndexInformer // nil: the resource calls only AddEventHandler
	handler                   cache.ResourceEventHandler
}

func (i *handInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	i.handler = h
	return syncedRegistration{}, nil
}

type syncedRegistration struct {
	cache.ResourceEventHandlerRegistration
}

func (syncedRegistration) HasSynced() bool { return true }

func (c *handCache) Get(key string) (any, bool, error) {
	if o, ok := c.store[key]; ok {
		return o, true, nil
	}
	return nil, false, nil
}

func (c *handCache) List() []any {
	out := make([]any, 0, len(c.store))
	for _, o := range c.store {
		out = append(out, o)
	}
	return out
}

func (c *handCache) SharedIndexInformer() cache.SharedIndexInformer { return &c.inf }

// put delivers the watch event of obj's create or update, as an informer
// does: store first, then handler.
func (c *handCache) put(obj *corev1.ConfigMap) {
	key := obj.Namespace + "/" + obj.Name
	old, had := c.store[key]
	c.store[key] = obj
	if had {
		c.inf.handler.OnUpdate(old, obj)
	} else {
		c.inf.handler.OnAdd(obj, false)
	}
}

// remove delivers the watch event of the delete of the object whose final
// state is final.
func (c *handCache) remove(final *corev1.ConfigMap) {
	delete(c.store, final.Namespace+"/"+final.Name)
	c.inf.handler.OnDelete(final)
}

// answerClient is a child.Client whose Patch calls meanwhile with its
// answer before returning it: what the informer delivers between the
// API server's write and the resource's handling of its answer.
type answerClient struct {
	child.Client[*corev1.ConfigMap]
	meanwhile func(answer *corev1.ConfigMap)
}

func (c answerClient) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*corev1.ConfigMap, error) {
	answer, err := c.Client.Patch(ctx, name, pt, data, opts, sub...)
	if err == nil && c.meanwhile != nil {
		c.meanwhile(answer)
	}
	return answer, err
}

// TestAnswerAfterInformerEvents: the informer can show the resource's
// own create, and what another client did to the child next, before the
// resource handles the create's answer. The owner index must not take the
// child back from the answer then: the owner's deletion would delete a
// child adopted by another owner, or relabelled for another resource, or
// send a delete for one already gone.
func TestAnswerAfterInformerEvents(t *testing.T) {
	other := types.UID("other-owner-uid")
	for _, tc := range []struct {
		name string
		// next is what another client does to the created child: the
		// child's new state, nil when it deletes it.
		next func(*corev1.ConfigMap) *corev1.ConfigMap
	}{
		{"deleted", func(*corev1.ConfigMap) *corev1.ConfigMap { return nil }},
		{"adopted", func(c *corev1.ConfigMap) *corev1.ConfigMap {
			c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "other", UID: other, Controller: new(true)}}
			return c
		}},
		{"relabelled", func(c *corev1.ConfigMap) *corev1.ConfigMap {
			c.Labels[child.LabelManagedBy] = "another-operator"
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := newFakeClient[corev1.ConfigMap]()
			inf := &handCache{store: map[string]*corev1.ConfigMap{}}
			// Between the create and its answer's handling, the informer
			// shows the create, then the next change of another client.
			once := false
			client := answerClient{Client: server.For("demo"), meanwhile: func(answer *corev1.ConfigMap) {
				if once {
					return
				}
				once = true
				inf.put(answer.DeepCopy())
				key := answer.Namespace + "/" + answer.Name
				next := tc.next(answer.DeepCopy())
				server.mu.Lock()
				server.rv++
				rv := strconv.Itoa(server.rv)
				if next != nil {
					next.ResourceVersion = rv
					server.objs[key] = next.DeepCopy()
				} else {
					delete(server.objs, key)
				}
				server.mu.Unlock()
				if next != nil {
					inf.put(next)
					return
				}
				// The final state, at the delete's resourceVersion, as the
				// API server's delete event carries it.
				final := answer.DeepCopy()
				final.ResourceVersion = rv
				inf.remove(final)
			}}
			r := newHandResource(t, client, inf)
			if !child.OwnerIndexSynced(r) {
				t.Fatal("the resource does not index its children by owner")
			}
			ctx := context.Background()
			w := owner()
			if err := r.EnsureCreated(ctx, w); err != nil {
				t.Fatal(err)
			}
			if len(server.applies) != 1 || !once {
				t.Fatalf("applies = %v, want the ConfigMap's create", server.applies)
			}
			gone := w.DeepCopy()
			gone.DeletionTimestamp = &metav1.Time{}
			if err := r.EnsureDeleted(ctx, gone); err != nil {
				t.Fatal(err)
			}
			if server.deleteCalls != 0 {
				t.Errorf("the owner's deletion sent %d delete request(s) (deleted: %v) for a child the informer showed %s before the create's answer came back, want none: the owner index took it back from the answer",
					server.deleteCalls, server.deletes, tc.name)
			}
		})
	}
}

// TestAnswerThenInformerRelist: the resource's create is answered before
// the informer shows it; then the informer's watch breaks and its relist
// shows the child as another client left it since (adopted by another
// owner, or relabelled out of the informer's selection: not listed at
// all), never the created state. The owner index must not keep the child
// under the owner from the answer: the owner's deletion would delete a
// child another owner or resource now keeps (adoption keeps the UID, so
// the precondition does not stop it).
func TestAnswerThenInformerRelist(t *testing.T) {
	other := types.UID("other-owner-uid")
	for _, tc := range []struct {
		name string
		next func(*corev1.ConfigMap) *corev1.ConfigMap
		// listed: the relist holds the child (the informer selects it).
		listed bool
	}{
		{"adopted", func(c *corev1.ConfigMap) *corev1.ConfigMap {
			c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "other", UID: other, Controller: new(true)}}
			return c
		}, true},
		{"relabelled", func(c *corev1.ConfigMap) *corev1.ConfigMap {
			c.Labels[child.LabelManagedBy] = "another-operator"
			return c
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := newFakeClient[corev1.ConfigMap]()
			inf := &handCache{store: map[string]*corev1.ConfigMap{}}
			r := newHandResource(t, server.For("demo"), inf)
			ctx := context.Background()
			w := owner()
			// The create, answered; the informer has not shown it.
			if err := r.EnsureCreated(ctx, w); err != nil {
				t.Fatal(err)
			}
			if len(server.applies) != 1 {
				t.Fatalf("applies = %v, want the ConfigMap's create", server.applies)
			}
			// Another client changes the child.
			key := server.applies[0]
			server.mu.Lock()
			next := tc.next(server.objs[key].DeepCopy())
			server.rv++
			next.ResourceVersion = strconv.Itoa(server.rv)
			server.objs[key] = next.DeepCopy()
			// Another object, written after it.
			server.rv++
			unrelated := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "unrelated", ResourceVersion: strconv.Itoa(server.rv)}}
			server.mu.Unlock()
			// The relist: the store held neither.
			inf.put(unrelated)
			if tc.listed {
				inf.put(next)
			}
			gone := w.DeepCopy()
			gone.DeletionTimestamp = &metav1.Time{}
			if err := r.EnsureDeleted(ctx, gone); err != nil {
				t.Fatal(err)
			}
			if len(server.deletes) != 0 {
				t.Errorf("the owner's deletion deleted %v, a child the informer's relist showed %s: the owner index kept it from the create's answer",
					server.deletes, tc.name)
			}
		})
	}
}

// newHandResource returns the ConfigMap resource of the tests above, over
// client and the cache inf.
func newHandResource(t *testing.T, client child.Client[*corev1.ConfigMap], inf *handCache) *crud.Resource {
	t.Helper()
	r, err := child.New(child.Config[*corev1.Secret, *corev1.ConfigMap]{
		Name:         "configmap",
		Client:       func(string) child.Client[*corev1.ConfigMap] { return client },
		Cache:        inf,
		FieldManager: "test",
		Desired: func(_ context.Context, w *corev1.Secret) (*corev1.ConfigMap, error) {
			return benchConfigMap(w), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
