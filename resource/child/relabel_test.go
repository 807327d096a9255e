package child_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
)

// jobServer is an in-memory API server of Jobs for a Client with Get: an
// apply of a Job that exists with another controller or another pod
// template is refused as the API server refuses it (422: an object has one
// controller, the template is immutable); a merge patch of metadata takes
// labels and owner references, with its resourceVersion as precondition.
type jobServer struct {
	mu     sync.Mutex
	jobs   map[string]*batchv1.Job
	writes []string // "apply name" or "merge name: body"
	gets   int
	rv     int
}

func (s *jobServer) Get(_ context.Context, name string, _ metav1.GetOptions) (*batchv1.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	j, ok := s.jobs[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "batch", Resource: "jobs"}, name)
	}
	return j.DeepCopy(), nil
}

func (s *jobServer) Patch(_ context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, _ ...string) (*batchv1.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, exists := s.jobs[name]
	var j *batchv1.Job
	switch pt {
	case types.ApplyPatchType:
		if opts.Force == nil || !*opts.Force {
			return nil, fmt.Errorf("apply without force")
		}
		j = &batchv1.Job{}
		if err := json.Unmarshal(data, j); err != nil {
			return nil, err
		}
		if exists {
			// The owner references merge by uid: another controller's
			// stays, and an object has one controller.
			if oc, nc := metav1.GetControllerOf(old), metav1.GetControllerOf(j); oc != nil && nc != nil && oc.UID != nc.UID {
				return nil, apierrors.NewInvalid(schema.GroupKind{Group: "batch", Kind: "Job"}, name, nil)
			}
			if j.Spec.Template.Spec.Containers[0].Image != old.Spec.Template.Spec.Containers[0].Image {
				return nil, apierrors.NewInvalid(schema.GroupKind{Group: "batch", Kind: "Job"}, name, nil)
			}
			j.UID = old.UID
		} else {
			j.UID = types.UID("uid-" + name)
		}
		s.writes = append(s.writes, "apply "+name)
	case types.MergePatchType:
		if opts.Force != nil || opts.FieldManager == "" {
			return nil, fmt.Errorf("merge patch with force or without a field manager: %+v", opts)
		}
		if !exists {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: "batch", Resource: "jobs"}, name)
		}
		var p struct {
			Metadata struct {
				ResourceVersion string                  `json:"resourceVersion"`
				Labels          map[string]*string      `json:"labels"`
				OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
			} `json:"metadata"`
			Spec *json.RawMessage `json:"spec"`
		}
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, err
		}
		if p.Spec != nil {
			return nil, fmt.Errorf("merge patch writes the spec: %s", data)
		}
		if p.Metadata.ResourceVersion != old.ResourceVersion {
			return nil, apierrors.NewConflict(schema.GroupResource{Group: "batch", Resource: "jobs"}, name, fmt.Errorf("resourceVersion %q, want %q", p.Metadata.ResourceVersion, old.ResourceVersion))
		}
		j = old.DeepCopy()
		j.Labels = maps.Clone(j.Labels)
		if j.Labels == nil {
			j.Labels = map[string]string{}
		}
		for k, v := range p.Metadata.Labels {
			if v == nil {
				delete(j.Labels, k) // null removes the key
			} else {
				j.Labels[k] = *v
			}
		}
		if p.Metadata.OwnerReferences != nil {
			j.OwnerReferences = p.Metadata.OwnerReferences
		}
		s.writes = append(s.writes, "merge "+name+": "+string(data))
	default:
		return nil, fmt.Errorf("patch type %s", pt)
	}
	s.rv++
	j.ResourceVersion = fmt.Sprint(s.rv)
	s.jobs[name] = j
	return j.DeepCopy(), nil
}

func (s *jobServer) Delete(context.Context, string, metav1.DeleteOptions) error {
	return fmt.Errorf("no delete expected")
}

// showIn shows every Job of the server in cache, as a watch would.
func (s *jobServer) showIn(cache *informertest.Informer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.jobs {
		_ = cache.Delete(j)
		_ = cache.Add(j.DeepCopy())
	}
}

// matchingJob returns a child resource, of a Secret owner, of the Job
// "migrate" whose pod runs image() (read at each reconciliation), through
// client and c, with a Matches that accepts any Job it finds (an immutable
// child: its pod template is never applied again) and ownerLabels.
func matchingJob(t *testing.T, client child.Client[*batchv1.Job], c child.Cache, image func() string, ownerLabels ...string) *crud.Resource {
	t.Helper()
	r, err := child.New(child.Config[*corev1.Secret, *batchv1.Job]{
		Name:   "job",
		Client: func(string) child.Client[*batchv1.Job] { return client },
		Cache:  c,
		Desired: func(context.Context, *corev1.Secret) (*batchv1.Job, error) {
			return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "migrate"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "step", Image: image()}}},
			}}}, nil
		},
		Matches:      func(_, _ *batchv1.Job) bool { return true },
		OwnerLabels:  ownerLabels,
		FieldManager: "test-operator",
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// stepV1 is the image of matchingJob's pod in tests that never change it.
func stepV1() string { return "step:v1" }

// TestMatchesRelabels: a Job whose resource's Matches says it never needs
// a write still follows its owner's labels (OwnerLabels: the shard label
// of a sharded operator) and takes its controller reference, written with a
// merge patch of that metadata alone, conditional on the Job's
// resourceVersion, never an apply of its pod template, which the owner's
// new desired state has otherwise: cached (the Cache selects the Job
// whatever its label), and not cached (the Cache selects the owner's
// shard: the Job is read from the API server first). Once relabelled, no
// write follows.
func TestMatchesRelabels(t *testing.T) {
	const shard = "shard.operatorkit.io/ring"
	for _, cached := range []bool{true, false} {
		t.Run(fmt.Sprintf("cached=%v", cached), func(t *testing.T) {
			srv := &jobServer{jobs: map[string]*batchv1.Job{}}
			cache := informertest.New()
			image := "step:v1"
			r := matchingJob(t, srv, cache, func() string { return image }, shard)
			ctx := context.Background()
			w := owner()
			w.Labels = map[string]string{shard: "replica-a"}
			// sync shows the server's Job in the cache, as a watch would:
			// one labelled for another shard only when cached.
			sync := func() {
				for _, j := range srv.jobs {
					_ = cache.Delete(j)
					if cached || j.Labels[shard] == w.Labels[shard] {
						_ = cache.Add(j.DeepCopy())
					}
				}
			}
			if err := r.EnsureCreated(ctx, w); err != nil {
				t.Fatalf("create: %v", err)
			}
			sync()
			if len(srv.writes) != 1 || srv.writes[0] != "apply migrate" {
				t.Fatalf("writes = %q, want one apply", srv.writes)
			}

			// The owner moves to replica-b, whose release runs another
			// image: the Job is relabelled, not applied.
			w.Labels[shard], image = "replica-b", "step:v2"
			sync()
			if n := len(cache.List()); (n != 0 && !cached) || (n != 1 && cached) {
				t.Fatalf("cache holds %d Jobs after the move", n)
			}
			for i := range 3 {
				if err := r.EnsureCreated(ctx, w); err != nil {
					t.Fatalf("after the move (reconciliation %d): %v", i+1, err)
				}
				sync()
			}
			j := srv.jobs["migrate"]
			if len(srv.writes) != 2 || srv.writes[1] != `merge migrate: {"metadata":{"resourceVersion":"1","labels":{"shard.operatorkit.io/ring":"replica-b"}}}` {
				t.Errorf("writes after the move = %q, want the apply and one merge patch of the shard label, conditional on resourceVersion 1", srv.writes)
			}
			if j.Labels[shard] != "replica-b" || j.Spec.Template.Spec.Containers[0].Image != "step:v1" {
				t.Errorf("Job after the move: labels %v, image %s; want %s=replica-b, step:v1", j.Labels, j.Spec.Template.Spec.Containers[0].Image, shard)
			}
			if ref := metav1.GetControllerOf(j); ref == nil || ref.UID != w.UID {
				t.Errorf("Job's controller = %+v, want the owner", ref)
			}
			// One GET before each create: the first, and the one after the
			// move when the Cache does not hold the Job.
			if wantGets := map[bool]int{true: 1, false: 2}[cached]; srv.gets != wantGets {
				t.Errorf("GETs = %d, want %d", srv.gets, wantGets)
			}
		})
	}
}

// TestMatchesRestoresControllerReference: a cached Job that Matches
// accepts, whose controller reference to its owner lost blockOwnerDeletion
// (another writer's update), gets the reference back with a merge patch of
// its owner references, conditional on its resourceVersion, once.
func TestMatchesRestoresControllerReference(t *testing.T) {
	srv := &jobServer{jobs: map[string]*batchv1.Job{}}
	cache := informertest.New()
	r := matchingJob(t, srv, cache, stepV1)
	ctx := context.Background()
	sync := func() { srv.showIn(cache) }
	if err := r.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	j := srv.jobs["migrate"]
	no := false
	j.OwnerReferences[0].BlockOwnerDeletion = &no
	j.OwnerReferences = append([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "other-uid"}}, j.OwnerReferences...)
	srv.rv++
	j.ResourceVersion = fmt.Sprint(srv.rv)
	sync()
	for i := range 3 {
		if err := r.EnsureCreated(ctx, owner()); err != nil {
			t.Fatalf("reconciliation %d: %v", i+1, err)
		}
		sync()
	}
	want := `merge migrate: {"metadata":{"resourceVersion":"2","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"other","uid":"other-uid"},{"apiVersion":"v1","kind":"Secret","name":"web","uid":"owner-uid","controller":true,"blockOwnerDeletion":true}]}}`
	if len(srv.writes) != 2 || srv.writes[1] != want {
		t.Errorf("writes = %q, want the apply and %q", srv.writes, want)
	}
}

// TestMatchesRemovesStaleOwnerLabel: a Job that Matches accepts, whose
// owner lost a label of OwnerLabels (and Desired sets none), loses it too,
// with a merge patch that removes that key alone, once, as an apply
// removes a label its manager stops applying; other labels stay. The
// relabel wrote only the keys the owner has, and the old value stayed on
// the Job for ever (a stale shard label: selected by another shard's
// cache).
func TestMatchesRemovesStaleOwnerLabel(t *testing.T) {
	const shard, team = "shard.operatorkit.io/ring", "example.com/team"
	srv := &jobServer{jobs: map[string]*batchv1.Job{}}
	cache := informertest.New()
	r := matchingJob(t, srv, cache, stepV1, shard, team)
	sync := func() { srv.showIn(cache) }
	ctx := context.Background()
	w := owner()
	w.Labels = map[string]string{shard: "replica-a", team: "blue"}
	if err := r.EnsureCreated(ctx, w); err != nil {
		t.Fatal(err)
	}
	sync()
	if j := srv.jobs["migrate"]; j.Labels[team] != "blue" {
		t.Fatalf("Job's labels after the create = %v, want %s=blue", j.Labels, team)
	}
	delete(w.Labels, team)
	p, err := r.Plan(ctx, w, false)
	if err != nil {
		t.Fatal(err)
	}
	update, _ := p.UpdateChange()
	if cs, _ := update.(child.Changes); len(cs) != 1 || cs[0].String() != `job demo/migrate: metadata.labels[example.com/team] "blue" → (none)` {
		t.Errorf("plan = %v, want the removal of %s", update, team)
	}
	for i := range 3 {
		if err := r.EnsureCreated(ctx, w); err != nil {
			t.Fatalf("reconciliation %d: %v", i+1, err)
		}
		sync()
	}
	want := `merge migrate: {"metadata":{"resourceVersion":"1","labels":{"example.com/team":null}}}`
	if len(srv.writes) != 2 || srv.writes[1] != want {
		t.Errorf("writes = %q, want the apply and %q", srv.writes, want)
	}
	j := srv.jobs["migrate"]
	if _, has := j.Labels[team]; has || j.Labels[shard] != "replica-a" || j.Labels[child.LabelManagedBy] != "test-operator" {
		t.Errorf("Job's labels = %v, want %s gone, the others kept", j.Labels, team)
	}
}

// TestMatchesRelabelOfAChildGone: the relabel of a cached Job that was
// deleted an instant before (the Cache still shows it) is answered 404: an
// error that is retried, naming the Job, not a permanent ErrInvalidChild
// saying that the API server does not write Jobs (a merge patch needs the
// object; the kind is served). The Job's delete event wakes the owner,
// which creates it again.
func TestMatchesRelabelOfAChildGone(t *testing.T) {
	const shard = "shard.operatorkit.io/ring"
	srv := &jobServer{jobs: map[string]*batchv1.Job{}}
	cache := informertest.New()
	r := matchingJob(t, srv, cache, stepV1, shard)
	ctx := context.Background()
	w := owner()
	w.Labels = map[string]string{shard: "replica-a"}
	if err := r.EnsureCreated(ctx, w); err != nil {
		t.Fatal(err)
	}
	_ = cache.Add(srv.jobs["migrate"].DeepCopy())
	delete(srv.jobs, "migrate") // deleted; the Cache has not shown it yet
	w.Labels[shard] = "replica-b"
	err := r.EnsureCreated(ctx, w)
	const want = `job: apply update change: update job demo/migrate of secret demo/web: gone before its relabel: jobs.batch "migrate" not found`
	if err == nil || retry.IsPermanent(err) || errors.Is(err, child.ErrInvalidChild) || err.Error() != want {
		t.Fatalf("error = %v, want a retried error %q", err, want)
	}
}

// TestMatchesRelabelsAnEmptyOwnerLabel: an owner label whose value is
// empty (a valid label value) reaches a Job that Matches accepts, as any
// other value does, with one merge patch. The relabel compared the Job's
// value with the owner's by indexing the Job's labels, which reads "" for
// a missing key: it wrote nothing, and the Job never got the label.
func TestMatchesRelabelsAnEmptyOwnerLabel(t *testing.T) {
	const team = "example.com/team"
	srv := &jobServer{jobs: map[string]*batchv1.Job{}}
	cache := informertest.New()
	r := matchingJob(t, srv, cache, stepV1, team)
	sync := func() { srv.showIn(cache) }
	ctx := context.Background()
	w := owner()
	if err := r.EnsureCreated(ctx, w); err != nil {
		t.Fatal(err)
	}
	sync()
	w.Labels = map[string]string{team: ""}
	for i := range 3 {
		if err := r.EnsureCreated(ctx, w); err != nil {
			t.Fatalf("reconciliation %d: %v", i+1, err)
		}
		sync()
	}
	want := `merge migrate: {"metadata":{"resourceVersion":"1","labels":{"example.com/team":""}}}`
	if len(srv.writes) != 2 || srv.writes[1] != want {
		t.Errorf("writes = %q, want the apply and %q", srv.writes, want)
	}
	if v, ok := srv.jobs["migrate"].Labels[team]; !ok || v != "" {
		t.Errorf("Job's labels = %v, want %s=\"\"", srv.jobs["migrate"].Labels, team)
	}
}

// TestMatchesRelabelTheCacheWouldNotSelect: a relabel of a Job that
// Matches accepts, after which the Cache's selector would not select it,
// is not written (the Job would leave the Cache, and be read and found
// again at every create, or the next create fail): the step fails as for a
// desired child the Cache would not hold, a permanent ErrInvalidChild
// naming the selector, and nothing is written. Both when the owner lost a
// label the selector requires (not removed from the Job) and when its
// label took a value the selector does not select (the relabel checked the
// selector only when it removed a label: it moved the Job out of the
// Cache, and the owner failed at its next reconciliation).
func TestMatchesRelabelTheCacheWouldNotSelect(t *testing.T) {
	const team = "example.com/team"
	for _, tc := range []struct {
		name, selector string
		relabel        func(owner map[string]string)
	}{
		{name: "stale owner label the selector requires", selector: team, relabel: func(l map[string]string) { delete(l, team) }},
		{name: "owner label of a value the selector does not select", selector: team + " in (blue,green)", relabel: func(l map[string]string) { l[team] = "red" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &jobServer{jobs: map[string]*batchv1.Job{}}
			sel, err := labels.Parse(tc.selector)
			if err != nil {
				t.Fatal(err)
			}
			cache := selectingCache{Informer: informertest.New(), selector: sel}
			r := matchingJob(t, srv, cache, stepV1, team)
			ctx := context.Background()
			w := owner()
			w.Labels = map[string]string{team: "blue"}
			if err := r.EnsureCreated(ctx, w); err != nil {
				t.Fatal(err)
			}
			_ = cache.Add(srv.jobs["migrate"].DeepCopy())
			tc.relabel(w.Labels)
			err = r.EnsureCreated(ctx, w)
			if !errors.Is(err, child.ErrInvalidChild) || !retry.IsPermanent(err) || !strings.Contains(err.Error(), fmt.Sprintf("selector %q", tc.selector)) {
				t.Errorf("error = %v, want a permanent ErrInvalidChild naming the selector", err)
			}
			if len(srv.writes) != 1 {
				t.Errorf("writes = %q, want the create alone", srv.writes)
			}
		})
	}
}

// TestMatchesChildReadTheCacheWouldNotSelect: a Job that the Cache does
// not hold (it excludes paused Jobs), read before its create, whose
// relabel the Cache would still not select, is not relabelled: the step
// fails as for a cached one, a permanent ErrInvalidChild naming the
// selector. The relabel was written, and the Job read again at every
// create.
func TestMatchesChildReadTheCacheWouldNotSelect(t *testing.T) {
	const team, paused = "example.com/team", "example.com/paused"
	sel, err := labels.Parse("!" + paused)
	if err != nil {
		t.Fatal(err)
	}
	srv := &jobServer{jobs: map[string]*batchv1.Job{}}
	cache := selectingCache{Informer: informertest.New(), selector: sel}
	r := matchingJob(t, srv, cache, stepV1, team)
	ctx := context.Background()
	w := owner()
	w.Labels = map[string]string{team: "blue"}
	if err := r.EnsureCreated(ctx, w); err != nil {
		t.Fatal(err)
	}
	srv.jobs["migrate"].Labels[paused] = "true" // the Cache does not hold it
	w.Labels[team] = "green"
	err = r.EnsureCreated(ctx, w)
	if !errors.Is(err, child.ErrInvalidChild) || !retry.IsPermanent(err) || !strings.Contains(err.Error(), `selector "!example.com/paused"`) {
		t.Errorf("error = %v, want a permanent ErrInvalidChild naming the selector", err)
	}
	if len(srv.writes) != 1 {
		t.Errorf("writes = %q, want the create alone", srv.writes)
	}
}
