package child_test

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/resource/crud"
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
