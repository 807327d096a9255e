//go:build linux

package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	operatorpkg "github.com/operatorkit/operatorkit/operator"
)

// TestShardingAssignsAnEmptyShardLabel: an object created with the shard
// label present but empty (a template that names the label, a tool that
// blanks what it must ignore) belongs to no replica, as one without the
// label does: it must be assigned as soon, and counted as waiting
// (operatorkit_shard_objects{shard=""}) until then, not left to the
// assigner's resync every 10 minutes.
func TestShardingAssignsAnEmptyShardLabel(t *testing.T) {
	t.Parallel() // a namespace and Leases of its own
	ns := newNamespace(t)
	ensureWidgetCRD(t)
	config := shardConfig(env.Config(), ns, "a")
	config.MetricsAddress = "127.0.0.1:0"
	op, err := operatorpkg.New(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Add(operatorFramework(t, op, ns, "widgets-empty", newOwnedConfigMapOps("empty", op.OwnWrites()))); err != nil {
		t.Fatal(err)
	}
	stop, _ := runOperator(op)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Run() = %v", err)
		}
	})
	createWidget(t, newWidget(ns, "plain", "", map[string]string{"k": "v"}))
	assigned := func(name string) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			w, err := widgetClient(t, ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && w.GetLabels()[shardLabel] == "a", nil
		}
	}
	poll(t, "the assigner to assign a widget", assigned("plain"))

	empty := newWidget(ns, "empty", "", map[string]string{"k": "v"})
	empty.SetLabels(map[string]string{shardLabel: ""})
	createWidget(t, empty)
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 40*shardRetry, true, assigned("empty")); err != nil {
		_, body := httpGet(t, metricsURL(t, op)+"/metrics")
		var waiting string
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "operatorkit_shard_objects{") && strings.Contains(line, `shard=""`) {
				waiting = line
			}
		}
		t.Fatalf("a widget created with an empty shard label was not assigned within %s (the assigner assigns one without the label at once); the assigner reports %q", 40*shardRetry, waiting)
	}
}
