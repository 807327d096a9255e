package child_test

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operatorkit/operatorkit/informer/informertest"
)

// forbiddenGets is a jobServer whose identity may not get Jobs (a role
// with list, watch, patch and delete, all that the resource needed before
// it read a child first).
type forbiddenGets struct{ *jobServer }

func (s forbiddenGets) Get(_ context.Context, name string, _ metav1.GetOptions) (*batchv1.Job, error) {
	s.mu.Lock()
	s.gets++
	s.mu.Unlock()
	return nil, apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, name, nil)
}

// TestMatchesCreateWithoutGet: with Matches and OwnerLabels set, a child
// the Cache does not hold is read first; an identity that may not get the
// kind (403) still creates it, by the apply it made before the read was
// added, rather than failing every create.
func TestMatchesCreateWithoutGet(t *testing.T) {
	const shard = "shard.operatorkit.io/ring"
	srv := forbiddenGets{&jobServer{jobs: map[string]*batchv1.Job{}}}
	r := matchingJob(t, srv, informertest.New(), stepV1, shard)
	w := owner()
	w.Labels = map[string]string{shard: "replica-a"}
	if err := r.EnsureCreated(context.Background(), w); err != nil {
		t.Fatalf("create with get forbidden: %v", err)
	}
	if srv.gets != 1 || len(srv.writes) != 1 || srv.writes[0] != "apply migrate" {
		t.Errorf("gets = %d, writes = %q; want one GET (forbidden) and one apply", srv.gets, srv.writes)
	}
}
