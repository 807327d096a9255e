package integration

// The operator of TestMigrationOperator, written from the docs alone
// (README.md, docs/getting-started.md, godoc): a DatabaseMigration lists
// steps, each a container to run once, and the operator runs them one
// after another, each as a batch/v1 Job, the next only once the one before
// succeeded. It is the shape of the field's "stepper" and "phase
// reconciler" engines, on a plain resource chain:
//
//   - status (migrationStatus): records in status.currentStep and
//     status.completedSteps where the migration is, set with
//     statuscontext for the Framework's one status apply;
//   - jobs (child.New with DesiredSet): the Jobs of the completed steps,
//     kept, and the Job of the current step, created once, never written
//     again; Readiness waits for it (Reconciling True, WaitingForChild).
//
// Its choices, as a user reads them:
//   - Ready True once every step's Job succeeded; Reconciling True while a
//     step runs, saying which Job it waits for.
//   - A Job that failed makes the migration give up: Stalled True, reason
//     StepFailed, no retry and no new Job, until the spec changes (a new
//     generation), which runs the failed step again with the new spec (its
//     Job deleted, then created again); deleting the failed Job runs the
//     step again too, as deleting a running one does.
//   - Completed steps never run again, whatever the spec says of them
//     later (a step is known by its name); a step whose Job runs runs to
//     its end as it was started (a Job's pod template cannot change, and
//     stopping a migration midway is the worst choice), also when the spec
//     no longer lists it; an edit of the steps decides the steps that have
//     not started.
//   - Deleting the DatabaseMigration deletes its Jobs with their pods (the
//     child resource deletes with propagation Background, where the API
//     server's own default for a batch/v1 Job orphans the pods).

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/requeuecontext"
	"github.com/operatorkit/operatorkit/context/statuscontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/router"
)

const (
	migrationOperator = "migration-operator"
	// migrationGeneration annotates each Job with the generation of the
	// DatabaseMigration that created it.
	migrationGeneration = "migration.example.com/generation"
	reasonStepFailed    = "StepFailed"
)

// DatabaseMigration runs Spec.Steps one after another.
type DatabaseMigration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              DatabaseMigrationSpec   `json:"spec"`
	Status            DatabaseMigrationStatus `json:"status,omitempty"`
}

// DatabaseMigrationSpec lists the steps, in the order they run.
type DatabaseMigrationSpec struct {
	Steps []MigrationStep `json:"steps"`
}

// MigrationStep is one container to run to completion.
type MigrationStep struct {
	Name    string   `json:"name"`
	Image   string   `json:"image"`
	Command []string `json:"command,omitempty"`
}

// DatabaseMigrationStatus is written by the Framework, in one apply: the
// conditions, observedGeneration, and the steps, which the status resource
// sets.
type DatabaseMigrationStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	CurrentStep        string             `json:"currentStep,omitempty"`
	CompletedSteps     []string           `json:"completedSteps,omitempty"`
}

// DeepCopyObject is what controller-gen would write.
func (m *DatabaseMigration) DeepCopyObject() runtime.Object {
	c := *m
	m.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Spec.Steps = slices.Clone(m.Spec.Steps)
	for i := range c.Spec.Steps {
		c.Spec.Steps[i].Command = slices.Clone(m.Spec.Steps[i].Command)
	}
	c.Status.Conditions = slices.Clone(m.Status.Conditions)
	c.Status.CompletedSteps = slices.Clone(m.Status.CompletedSteps)
	return &c
}

// migrationCRD is the DatabaseMigration CRD in group, as controller-gen
// would write it: steps a map list keyed by name, a status subresource.
func migrationCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string", MinLength: ptr[int64](1)}
	strs := apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}}
	crd := backupCRD(group) // status: observedGeneration and conditions, as the Framework wants them
	crd.Name = "databasemigrations." + group
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "databasemigrations", Kind: "DatabaseMigration"}
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties
	status := props["status"]
	status.Properties["currentStep"], status.Properties["completedSteps"] = str, strs
	props["status"] = status
	stepName := apiextensionsv1.JSONSchemaProps{Type: "string", Pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", MaxLength: ptr[int64](20)}
	props["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"steps"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"steps": {Type: "array", MinItems: ptr[int64](1), XListType: ptr("map"), XListMapKeys: []string{"name"},
			Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", Required: []string{"name", "image"},
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": stepName, "image": str, "command": strs}}}}}}
	return crd
}

// migrationJobName names the Job of a step.
func migrationJobName(m *DatabaseMigration, step string) string { return m.Name + "-" + step }

// jobFinished returns whether j (nil: none) ended, and whether it
// succeeded.
func jobFinished(j *batchv1.Job) (finished, succeeded bool) {
	if j == nil {
		return false, false
	}
	for _, c := range j.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
			return true, c.Type == batchv1.JobComplete
		}
	}
	return false, false
}

// migrationProgress is where a migration stands, from its status and the
// Jobs the cache holds: the steps completed (recorded ones first, then
// those whose Jobs succeeded since, in spec order), the current step (""
// once all are done) and its Job (nil when it has none yet).
type migrationProgress struct {
	done    []string
	current string
	job     *batchv1.Job
}

func progressOf(m *DatabaseMigration, jobs child.Cache) (migrationProgress, error) {
	p := migrationProgress{done: slices.Clone(m.Status.CompletedSteps)}
	// The step current until now first: its Job runs on to its end, also
	// when the spec no longer lists it. Then the spec's steps, in order.
	steps := []string{m.Status.CurrentStep}
	for _, s := range m.Spec.Steps {
		steps = append(steps, s.Name)
	}
	for i, s := range steps {
		if s == "" || slices.Contains(p.done, s) {
			continue
		}
		j, _, err := informer.Get[*batchv1.Job](jobs, m.Namespace, migrationJobName(m, s))
		if err != nil {
			return p, err
		}
		switch finished, succeeded := jobFinished(j); {
		case succeeded:
			p.done = append(p.done, s)
		case p.current == "" && (i > 0 || j != nil && !finished):
			p.current, p.job = s, j
		}
	}
	return p, nil
}

// migrationStatus is the resource that sets status.currentStep and
// status.completedSteps for the Framework's status apply. It runs before
// the jobs resource, which ends the chain while it waits: the fields set
// before are written anyway, with the conditions, when they changed.
type migrationStatus struct {
	jobs       child.Cache
	reconciles *sync.Map // name: *atomic.Int64, counted for the test
}

func (s *migrationStatus) Name() string                             { return "status" }
func (s *migrationStatus) EnsureDeleted(context.Context, any) error { return nil }

func (s *migrationStatus) EnsureCreated(ctx context.Context, obj any) error {
	m, ok := obj.(*DatabaseMigration)
	if !ok {
		return retry.Permanent(fmt.Errorf("reconciles %T, got %T", m, obj))
	}
	n, _ := s.reconciles.LoadOrStore(m.Name, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	p, err := progressOf(m, s.jobs)
	if err != nil {
		return err
	}
	var current any // nil once every step is done: removes the field
	if p.current != "" {
		current = p.current
	}
	statuscontext.Set(ctx, "currentStep", current)
	statuscontext.Set(ctx, "completedSteps", p.done) // nil: none yet
	return nil
}

// runMigrationOperator runs the DatabaseMigration operator for namespace
// ns until the test ends, installing the CRD first. It returns the count
// of reconciliations of each DatabaseMigration by name (*atomic.Int64;
// counted by the status resource, the chain's first).
func runMigrationOperator(t *testing.T, ns string, crd *apiextensionsv1.CustomResourceDefinition) *sync.Map {
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	op, err := operatorpkg.New(operatorpkg.Config{Name: migrationOperator, RESTConfig: env.Config(), Logger: log.NewNopLogger()})
	must(t, err)
	migrations, err := op.Informer(informer.Config{GVR: gvr, ObjectType: &DatabaseMigration{}, Namespace: ns})
	must(t, err)
	jobs, err := op.Informer(informer.Config{GVR: batchv1.SchemeGroupVersion.WithResource("jobs"), ObjectType: &batchv1.Job{},
		Namespace: ns, LabelSelector: child.LabelManagedBy + "=" + migrationOperator})
	must(t, err)

	reconciles := new(sync.Map)
	status := &migrationStatus{jobs: jobs, reconciles: reconciles}
	// kept is a Job that exists and is never written again: a Job's pod
	// template cannot change, and Matches says it needs no write.
	kept := func(m *DatabaseMigration, step string) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: migrationJobName(m, step)}}
	}
	jobResource, err := child.New(child.Config[*DatabaseMigration, *batchv1.Job]{
		Name: "jobs", Client: child.Typed(op.Kubernetes().BatchV1().Jobs), Cache: jobs,
		FieldManager: migrationOperator, Writes: op.OwnWrites(),
		DesiredSet: func(ctx context.Context, m *DatabaseMigration) ([]*batchv1.Job, error) {
			p, err := progressOf(m, jobs)
			if err != nil {
				return nil, err
			}
			var out []*batchv1.Job
			for _, step := range p.done { // those that still exist stay
				if _, ok, err := jobs.Get(m.Namespace + "/" + migrationJobName(m, step)); err != nil {
					return nil, err
				} else if ok {
					out = append(out, kept(m, step))
				}
			}
			if p.current == "" {
				return out, nil
			}
			if p.job == nil { // the current step starts: its Job, once
				i := slices.IndexFunc(m.Spec.Steps, func(s MigrationStep) bool { return s.Name == p.current })
				step := m.Spec.Steps[i]
				return append(out, &batchv1.Job{
					ObjectMeta: metav1.ObjectMeta{Name: migrationJobName(m, step.Name),
						Annotations: map[string]string{migrationGeneration: strconv.FormatInt(m.Generation, 10)}},
					Spec: batchv1.JobSpec{BackoffLimit: ptr[int32](0), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers:    []corev1.Container{{Name: "step", Image: step.Image, Command: step.Command}},
					}}},
				}), nil
			}
			if finished, _ := jobFinished(p.job); !finished {
				return append(out, kept(m, p.current)), nil // it runs: Readiness waits for it
			}
			// It failed: give up until the spec changes; then delete the
			// Job (it is not in the set) and create it again.
			if gen, _ := strconv.ParseInt(p.job.Annotations[migrationGeneration], 10, 64); gen >= m.Generation {
				_, why := child.ReadinessOf(p.job)
				return nil, retry.Permanent(conditioncontext.WithReason(fmt.Errorf("step %s: job %s %s", p.current, p.job.Name, why), reasonStepFailed))
			}
			conditioncontext.Set(ctx, conditioncontext.Reconciling, metav1.ConditionTrue, "StepRestarting", "step "+p.current+" runs again")
			requeuecontext.SetRequeueAfter(ctx, time.Second)
			return out, nil
		},
		Matches:   func(_, _ *batchv1.Job) bool { return true },
		Readiness: child.ReadinessOf[*batchv1.Job],
		WaitDelay: 2 * time.Second,
	})
	must(t, err)
	rtr, err := router.Single("v1", status, jobResource)
	must(t, err)
	f, err := op.NewFramework(framework.Config{Name: migrationOperator, Informer: migrations, ResourceRouter: rtr, Resource: gvr, Conditions: true, CRD: crd})
	must(t, err)
	must(t, op.Owns(f, schema.GroupKind{Group: gvr.Group, Kind: "DatabaseMigration"}, jobs))
	stop, _ := runOperator(op)
	t.Cleanup(func() { must(t, stop()) })
	return reconciles
}
