package integration

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/requestcount"
	"github.com/operatorkit/operatorkit/resource/child"
)

// serials records, from a watch of the test's own, every certificate a
// Secret ever held (by serial number, in order), so that a certificate
// the operator wrote and overwrote at once is counted too.
type serials struct {
	mu   sync.Mutex
	seen []string
}

func (s *serials) watch(t *testing.T, ns, name string) {
	t.Helper()
	w, err := kubeClient(t).CoreV1().Secrets(ns).Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	must(t, err)
	t.Cleanup(w.Stop)
	go func() {
		for e := range w.ResultChan() {
			sec, ok := e.Object.(*corev1.Secret)
			if !ok || e.Type == watch.Deleted {
				continue
			}
			cert, err := parseCertificate(sec)
			if err != nil {
				continue
			}
			serial := cert.SerialNumber.Text(16)
			s.mu.Lock()
			if len(s.seen) == 0 || s.seen[len(s.seen)-1] != serial {
				s.seen = append(s.seen, serial)
			}
			s.mu.Unlock()
		}
	}()
}

func (s *serials) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// TestCertificateOperator runs the Certificate operator
// (certificate_operator_test.go): a Certificate gets one TLS Secret, kept
// across reconciliations and resyncs (no write), renewed once when it
// enters its renewBefore window (the operator is woken then), issued again
// at once when its dnsNames change and when someone deletes the Secret or
// edits its data; its status follows the certificate; the Deployment it
// names (not its own) gets the Secret's checksum on its pod template, loses
// it when the Certificate names none, and when the Certificate is deleted,
// with the Secret; a renewBefore not shorter than the duration is refused
// (Stalled) and issues nothing.
func TestCertificateOperator(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	crd := certificateCRD(uniqueCRDGroup(t))
	deleteCRDOnCleanup(t, newCRDClient(t), crd)
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	reg, counter := prometheus.NewRegistry(), requestcount.New()
	runCertificateOperator(t, operatorpkg.Config{Name: certificateOperator, RESTConfig: counter.Wrap(env.Config()), Logger: log.NewNopLogger(), Registry: reg}, ns, crd, time.Second)
	kube := kubeClient(t)
	certs := dynamicClientset(t).Resource(gvr).Namespace(ns)
	eventually := func(what string, cond wait.ConditionWithContextFunc) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, cond); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	var issued serials
	issued.watch(t, ns, "web-tls")
	issuedIs := func(n int) {
		t.Helper()
		eventually(fmt.Sprintf("%d certificates issued", n), func(context.Context) (bool, error) {
			if got := issued.list(); len(got) > n {
				return false, fmt.Errorf("%d certificates issued, want %d: %v", len(got), n, got)
			}
			return len(issued.list()) == n, nil
		})
	}
	// The Deployment is the user's: the operator annotates its pods.
	labels := map[string]string{"app": "web"}
	_, err := kube.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
		}},
	}, metav1.CreateOptions{})
	must(t, err)
	annotation := func(ctx context.Context) (string, bool) {
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return "", false
		}
		v, ok := d.Spec.Template.Annotations[certChecksumAnnotation]
		return v, ok
	}
	// status returns the Certificate's status fields and whether its
	// Secret holds the certificate they describe, with the checksum on
	// the Deployment.
	type observed struct {
		serial, notAfter string
		secret           *corev1.Secret
	}
	current := func(ctx context.Context) (observed, bool) {
		u, err := certs.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return observed{}, false
		}
		serial, _, _ := unstructured.NestedString(u.Object, "status", "serialNumber")
		notAfter, _, _ := unstructured.NestedString(u.Object, "status", "notAfter")
		s, err := kube.CoreV1().Secrets(ns).Get(ctx, "web-tls", metav1.GetOptions{})
		if err != nil || s.Type != corev1.SecretTypeTLS {
			return observed{}, false
		}
		cert, err := parseCertificate(s)
		if err != nil || cert.SerialNumber.Text(16) != serial || cert.NotAfter.UTC().Format(time.RFC3339) != notAfter {
			return observed{}, false
		}
		sum, err := child.Checksum(s)
		if got, _ := annotation(ctx); err != nil || got != sum {
			return observed{}, false
		}
		return observed{serial: serial, notAfter: notAfter, secret: s}, true
	}
	// settled waits until status, Secret and Deployment agree on a
	// certificate other than those of not, and Ready is True.
	settled := func(not ...string) observed {
		t.Helper()
		var o observed
		eventually("status, Secret and Deployment to agree", func(ctx context.Context) (bool, error) {
			var ok bool
			o, ok = current(ctx)
			return ok && !slices.Contains(not, o.serial), nil
		})
		_, err := env.WaitReady(t.Context(), gvr, ns, "web")
		must(t, err)
		return o
	}
	create := func(duration, renewBefore string) {
		t.Helper()
		eventually("the Certificate CRD", func(ctx context.Context) (bool, error) {
			_, err := certs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": gvr.GroupVersion().String(), "kind": "Certificate", "metadata": map[string]any{"name": "web"},
				"spec": map[string]any{"dnsNames": []any{"web.example.com"}, "duration": duration, "renewBefore": renewBefore,
					"secretName": "web-tls", "deploymentName": "web"}}}, metav1.CreateOptions{})
			return err == nil, nil
		})
	}

	// A long-lived certificate first: issued once, then steady.
	create("1h", "10m")
	first := settled()
	issuedIs(1)
	if _, err := env.WaitCondition(t.Context(), gvr, ns, "web", conditionRenewal, metav1.ConditionTrue, "Scheduled"); err != nil {
		t.Fatal(err)
	}

	// Steady: the informer resyncs every second; over 3 s, reconciles
	// (the resyncs) and no write, and still the same certificate.
	reconciles := func() float64 {
		return metricSum(t, reg, "operatorkit_framework_reconciliations_total", nil)
	}
	before, requests := reconciles(), counter.Snapshot()
	window := time.Now().Add(3 * time.Second)
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if w := counter.Snapshot().Sub(requests); w.Writes > 0 {
			return false, fmt.Errorf("a steady Certificate was written to: %v", w)
		}
		return time.Now().After(window), nil
	})
	must(t, err)
	if n := reconciles() - before; n < 2 || n > 5 {
		t.Errorf("%v reconciliations of a steady Certificate over 3 s with a resync every second, want 2 to 5", n)
	}
	issuedIs(1)

	// The dnsNames change: a new certificate at once, for the new names.
	_, err = certs.Patch(t.Context(), "web", types.MergePatchType, []byte(`{"spec":{"dnsNames":["web.example.com","www.example.com"]}}`), metav1.PatchOptions{})
	must(t, err)
	second := settled(first.serial)
	issuedIs(2)
	if cert, _ := parseCertificate(second.secret); !slices.Equal(cert.DNSNames, []string{"web.example.com", "www.example.com"}) {
		t.Errorf("the new certificate is for %v", cert.DNSNames)
	}

	// Someone deletes the Secret: a new certificate (the old key is gone
	// with it).
	must(t, kube.CoreV1().Secrets(ns).Delete(t.Context(), "web-tls", metav1.DeleteOptions{}))
	third := settled(first.serial, second.serial)
	issuedIs(3)

	// Someone edits its data: a new certificate, not the edit.
	patch := []byte(`{"data":{"tls.crt":"` + "bm90IGEgY2VydGlmaWNhdGU=" + `"}}`)
	_, err = kube.CoreV1().Secrets(ns).Patch(t.Context(), "web-tls", types.MergePatchType, patch, metav1.PatchOptions{})
	must(t, err)
	fourth := settled(first.serial, second.serial, third.serial)
	issuedIs(4) // the edit holds no certificate: not counted

	// No deploymentName: the annotation is given up; back, it returns.
	_, err = certs.Patch(t.Context(), "web", types.MergePatchType, []byte(`{"spec":{"deploymentName":null}}`), metav1.PatchOptions{})
	must(t, err)
	eventually("the annotation given up", func(ctx context.Context) (bool, error) {
		u, err := certs.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, recorded, _ := unstructured.NestedString(u.Object, "status", "annotatedDeployment")
		_, annotated := annotation(ctx)
		return !recorded && !annotated, nil
	})
	_, err = certs.Patch(t.Context(), "web", types.MergePatchType, []byte(`{"spec":{"deploymentName":"web"}}`), metav1.PatchOptions{})
	must(t, err)
	if again := settled(first.serial, second.serial, third.serial); again.serial != fourth.serial {
		t.Errorf("serial %s after the deploymentName changed, want %s kept", again.serial, fourth.serial)
	}
	issuedIs(4)

	// A short-lived certificate (the dnsNames change too, so it is issued
	// at once): valid 5 s, renewed 2 s before it ends, so every 3 s.
	// Each renewal comes at its renewalTime (the operator is woken then),
	// not before and not much after, and issues one certificate.
	_, err = certs.Patch(t.Context(), "web", types.MergePatchType, []byte(`{"spec":{"dnsNames":["web.example.com"],"duration":"5s","renewBefore":"2s"}}`), metav1.PatchOptions{})
	must(t, err)
	prev := settled(first.serial, second.serial, third.serial, fourth.serial)
	issuedIs(5)
	before, requests = reconciles(), counter.Snapshot()
	rotated := []string{prev.serial}
	for i := range 3 {
		cert, err := parseCertificate(prev.secret)
		must(t, err)
		renewAt := cert.NotAfter.Add(-2 * time.Second)
		next := settled(prev.serial)
		rotated = append(rotated, next.serial)
		// When it was issued, to the second: its notAfter less 5 s.
		cert, err = parseCertificate(next.secret)
		must(t, err)
		if issuedAt := cert.NotAfter.Add(-5 * time.Second); issuedAt.Before(renewAt) || issuedAt.After(renewAt.Add(2*time.Second)) {
			t.Errorf("renewal %d issued at %s, want at its renewal time %s or soon after", i+1, issuedAt.Format(time.TimeOnly), renewAt.Format(time.TimeOnly))
		}
		prev = next
	}
	// One certificate per rotation: the Secret held these, one after the
	// other, and no other in between.
	if got := issued.list(); len(got) < 4+len(rotated) || !slices.Equal(got[4:4+len(rotated)], rotated) {
		t.Errorf("the Secret held %v, want %v after the first four", got, rotated)
	}
	// Three rotations and about 9 resyncs: a loop would be hundreds. Each
	// rotation writes the Secret, the status and the Deployment.
	if n := reconciles() - before; n > 30 {
		t.Errorf("%v reconciliations over 3 rotations", n)
	}
	if w := counter.Snapshot().Sub(requests); w.Writes > 3*3+3 {
		t.Errorf("%v over 3 rotations, want 3 writes each", w)
	}

	// A renewBefore not shorter than the duration would make every
	// certificate due at once: refused, Stalled, and no certificate more.
	_, err = certs.Patch(t.Context(), "web", types.MergePatchType, []byte(`{"spec":{"renewBefore":"5s"}}`), metav1.PatchOptions{})
	must(t, err)
	if _, err := env.WaitCondition(t.Context(), gvr, ns, "web", "Stalled", metav1.ConditionTrue, "InvalidSpec"); err != nil {
		t.Fatal(err)
	}
	stalled := len(issued.list())
	window = time.Now().Add(2 * time.Second)
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if n := len(issued.list()); n > stalled {
			return false, fmt.Errorf("%d certificates issued while Stalled", n-stalled)
		}
		return time.Now().After(window), nil
	})
	must(t, err)

	// The delete: the Secret goes, and the annotation the operator put on
	// the Deployment it does not own (the Deployment stays).
	must(t, certs.Delete(t.Context(), "web", metav1.DeleteOptions{}))
	eventually("the Certificate and its Secret deleted, the annotation removed", func(ctx context.Context) (bool, error) {
		_, err1 := certs.Get(ctx, "web", metav1.GetOptions{})
		_, err2 := kube.CoreV1().Secrets(ns).Get(ctx, "web-tls", metav1.GetOptions{})
		_, annotated := annotation(ctx)
		return apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2) && !annotated, nil
	})
	if _, err := kube.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{}); err != nil {
		t.Errorf("the user's Deployment: %v", err)
	}
	// No reconciliation failed on the way but those refusing the spec (a
	// resource after the Secret's that did not find the Secret just
	// created would have).
	for _, result := range []string{"error", "conflict", "panic"} {
		if n := metricSum(t, reg, "operatorkit_framework_reconciliations_total", map[string]string{"result": result}); n > 0 {
			t.Errorf("%v reconciliations with result %s", n, result)
		}
	}
}
