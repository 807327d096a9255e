package child_test

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
)

// jobHandCache is a Cache of Jobs with an informer that only takes an
// event handler (so that the resource indexes its children by owner) and
// never delivers an event: an informer that has not shown a Job yet.
type jobHandCache struct{ inf handInformer }

func (c *jobHandCache) Get(string) (any, bool, error)                  { return nil, false, nil }
func (c *jobHandCache) List() []any                                    { return nil }
func (c *jobHandCache) SharedIndexInformer() cache.SharedIndexInformer { return &c.inf }

// deletingJobs is a jobServer that takes deletes.
type deletingJobs struct {
	*jobServer
	deletes []string
}

func (s *deletingJobs) Delete(_ context.Context, name string, _ metav1.DeleteOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deletes = append(s.deletes, name)
	delete(s.jobs, name)
	return nil
}

// TestMatchesChildReadInPlaceIsDeletedWithItsOwner: a replica whose Cache
// does not show the owner's Job yet (the sharding hand-over relabelled it
// an instant before) reads it, finds it in place and writes nothing; the
// owner's delete chain right after must still find and delete it, as it
// finds a child the resource has just written (the owner index holds the
// answers of its writes), also where no garbage collector runs.
func TestMatchesChildReadInPlaceIsDeletedWithItsOwner(t *testing.T) {
	const shard = "shard.operatorkit.io/ring"
	srv := &deletingJobs{jobServer: &jobServer{jobs: map[string]*batchv1.Job{}}}
	resource := func(c child.Cache) *crud.Resource { return matchingJob(t, srv, c, stepV1, shard) }
	w := owner()
	w.Labels = map[string]string{shard: "replica-b"}
	// The Job, as the hand-over left it: labelled for replica-b, the
	// owner's controller reference.
	if err := resource(informertest.New()).EnsureCreated(reconcileCtx(), w); err != nil {
		t.Fatal(err)
	}
	writes := len(srv.writes)

	r := resource(&jobHandCache{})
	if err := r.EnsureCreated(reconcileCtx(), w); err != nil {
		t.Fatalf("replica-b's create: %v", err)
	}
	if len(srv.writes) != writes {
		t.Fatalf("writes = %q, want none by replica-b: the Job is in place", srv.writes[writes:])
	}
	gone := w.DeepCopy()
	now := metav1.Now()
	gone.DeletionTimestamp = &now
	if err := r.EnsureDeleted(reconcileCtx(), gone); err != nil {
		t.Fatal(err)
	}
	if len(srv.deletes) != 1 {
		t.Errorf("deletes = %q, want the Job read in place an instant before: it stays, and nothing reconciles its owner again", srv.deletes)
	}
}

// TestMatchesChildReadOfAnotherController: the create of a child with
// Matches and OwnerLabels that the Cache does not hold reads it first, and
// finds it as a child the Cache holds would be found: another controller's
// being deleted is waited for, with the reason naming that controller (it
// said "being deleted" alone, where a cached one's names it), a previous
// owner's (of the owner's kind and name) fails with an error that is
// retried; neither is applied, which the API server refuses (an object has
// one controller) with a permanent ErrInvalidChild until the owner's
// resync.
func TestMatchesChildReadOfAnotherController(t *testing.T) {
	const shard = "shard.operatorkit.io/ring"
	for _, tc := range []struct {
		name     string
		ctrl     metav1.OwnerReference
		deleting bool
	}{
		{"another controller's, being deleted", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "other-uid", Controller: new(true)}, true},
		{"a previous owner's", metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: "web", UID: "previous-uid", Controller: new(true)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "migrate", UID: "old-job", ResourceVersion: "1",
				Labels:          map[string]string{child.LabelManagedBy: "test-operator", shard: "replica-a"},
				OwnerReferences: []metav1.OwnerReference{tc.ctrl}}}
			if tc.deleting {
				j.DeletionTimestamp = &metav1.Time{Time: time.Now()}
				j.Finalizers = []string{"example.com/hold"}
			}
			srv := &jobServer{jobs: map[string]*batchv1.Job{"migrate": j}}
			r := matchingJob(t, srv, informertest.New(), stepV1, shard)
			w := owner()
			w.Labels = map[string]string{shard: "replica-b"}
			ctx := reconcileCtx()
			err := r.EnsureCreated(ctx, w)
			switch {
			case len(srv.writes) != 0:
				t.Fatalf("writes = %q, want none", srv.writes)
			case tc.deleting && err != nil:
				t.Fatalf("error = %v, want a wait", err)
			case tc.deleting:
				assertMessage(t, ctx, "job demo/migrate not ready: being deleted (finalizers: example.com/hold), controlled by ConfigMap other (uid other-uid)")
			case err == nil || retry.IsPermanent(err) || !strings.Contains(err.Error(), "still the child of the previous Secret of that name (uid previous-uid)"):
				t.Fatalf("error = %v, want a retried error naming the previous owner", err)
			}
		})
	}
}
