package testenv_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/operatorkit/operatorkit/testenv"
)

func clientset(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestEnv exercises one server end to end: admin access, a kubeconfig another
// process could use, an RBAC-limited identity, and a restart that keeps data
// and lets existing clients reconnect.
func TestEnv(t *testing.T) {
	t.Parallel() // a server of its own
	env := testenv.New(t, testenv.Options{RBAC: true})
	ctx := t.Context()
	admin := clientset(t, env.Config())

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("admin create configmap: %v", err)
	}

	t.Run("kubeconfig", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "kubeconfig")
		if err := env.WriteKubeconfig(path); err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			t.Fatalf("load kubeconfig: %v", err)
		}
		if _, err := clientset(t, cfg).CoreV1().ConfigMaps("default").Get(ctx, "probe", metav1.GetOptions{}); err != nil {
			t.Fatalf("get through kubeconfig: %v", err)
		}
	})

	t.Run("rbac limits a user identity", func(t *testing.T) {
		cfg, err := env.UserConfig("alice", "team-a")
		if err != nil {
			t.Fatal(err)
		}
		alice := clientset(t, cfg)
		_, err = alice.CoreV1().ConfigMaps("default").Get(ctx, "probe", metav1.GetOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("get as alice without rules: err = %v, want Forbidden", err)
		}
		role := &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "cm-reader", Namespace: "default"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
		}
		if _, err := admin.RbacV1().Roles("default").Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "cm-reader", Namespace: "default"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "cm-reader"},
			Subjects:   []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "team-a"}},
		}
		if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := alice.CoreV1().ConfigMaps("default").Get(ctx, "probe", metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("alice never allowed to get after binding: %v", err)
		}
		if err := alice.CoreV1().ConfigMaps("default").Delete(ctx, "probe", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("delete as alice: err = %v, want Forbidden", err)
		}
	})

	t.Run("restart keeps data and clients", func(t *testing.T) {
		if err := env.RestartAPIServer(ctx); err != nil {
			t.Fatalf("restart: %v", err)
		}
		got, err := admin.CoreV1().ConfigMaps("default").Get(ctx, "probe", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get after restart with the old client: %v", err)
		}
		if got.Data["k"] != "v" {
			t.Fatalf("data after restart = %v, want k=v", got.Data)
		}
	})
}

func TestStartRejectsNegativeTimeout(t *testing.T) {
	_, err := testenv.Start(t.Context(), testenv.Options{StartTimeout: -time.Second})
	if err == nil || !strings.Contains(err.Error(), "StartTimeout") {
		t.Fatalf("Start() error = %v, want one naming StartTimeout", err)
	}
}

// TestManyServices creates more ClusterIP Services than a /24 service range
// holds (253 besides the "kubernetes" Service): each one gets a cluster IP,
// as in a cluster, so that demos and benchmarks of hundreds of objects with
// a Service each run on the test API server.
func TestManyServices(t *testing.T) {
	t.Parallel() // a server of its own
	env := testenv.New(t, testenv.Options{})
	cfg := env.Config()
	cfg.QPS, cfg.Burst = -1, 0
	c := clientset(t, cfg)
	ctx := t.Context()
	const n = 300
	for i := range n {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%03d", i), Namespace: "default"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
		}
		got, err := c.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create Service %d of %d: %v", i+1, n, err)
		}
		if got.Spec.ClusterIP == "" || got.Spec.ClusterIP == corev1.ClusterIPNone {
			t.Fatalf("Service %s: no cluster IP", got.Name)
		}
	}
}
